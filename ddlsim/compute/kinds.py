"""A table of functions keyed by a shard signature's model kind, filled by the rooms above.

compute prices and profiles shards whose kinds the workload room defines, but never imports it.
Workload modules register their functions into a `KindTable` here; `ddlsim.core.catalog` lists,
per kind, the module that registers it, and the table imports that module the first time the
kind is asked for (as `ddlsim.core.registry.Registry` does for config options).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class KindTable(Generic[F]):
    """`kind -> function` for one purpose (`noun`: what the function makes, for messages)."""

    def __init__(self, noun: str, options: Mapping[str, str]) -> None:
        self.noun = noun
        self.options = dict(options)  # kind -> the module that registers it (`ddlsim.core.catalog`)
        self._functions: dict[str, F] = {}

    def register(self, *kinds: str) -> Callable[[F], F]:
        """Decorator: the function serves every kind of `kinds`; a kind is registered once."""

        def decorator(function: F) -> F:
            for kind in kinds:
                if self._functions.get(kind, function) is not function:
                    raise TypeError(f"the {self.noun} of kind {kind!r} is registered twice")
                self._functions[kind] = function
            return function

        return decorator

    def kinds(self) -> list[str]:
        """Every kind registered or listed in the catalog (listing imports nothing)."""
        return sorted({*self._functions, *self.options})

    def registered(self) -> list[str]:
        """The kinds registered so far (the modules imported until now)."""
        return sorted(self._functions)

    def __contains__(self, kind: object) -> bool:
        return kind in self._functions or kind in self.options

    def get(self, kind: str) -> F | None:
        """The function of `kind`, importing its module first if it is not registered yet."""
        if kind not in self._functions and kind in self.options:
            module = self.options[kind]
            importlib.import_module(module)
            if kind not in self._functions:
                raise TypeError(f"{module} is listed for the {self.noun} of kind {kind!r} in ddlsim/core/catalog.py "
                                "but does not register it")
        return self._functions.get(kind)
