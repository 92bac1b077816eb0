"""Names a package re-exports from its modules, loaded on first use.

A package ``__init__`` that imports its own modules runs them whenever any one of them is
imported, and an import circle follows as soon as one of them needs another through the package.
So a package that offers a public surface names it instead::

    __getattr__, __dir__ = lazy_exports(__name__, {"estimate_collective": "ddlsim.network.api"})

and a name is imported from its module the first time someone asks for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], *, renamed: Mapping[str, str] | None = None
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for `package`: each name of `exports` comes from the module
    it maps to (under its `renamed` name there, if any) when first asked for."""
    renamed = dict(renamed or {})

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module protocol's name)
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), renamed.get(name, name))
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*vars(importlib.import_module(package)), *exports})

    return __getattr__, __dir__
