"""Weight initialisers do nothing to fake tensors while a capture runs.

A fake tensor has a shape, a dtype and a device but no values, so an initialiser has nothing to
write. Some of them also read values: torch's ``trunc_normal_`` redraws out-of-range samples
until ``mask.any()`` is false, a data-dependent branch that a fake tensor refuses (every ViT and
timm model calls it in ``__init__``). While the capture runs, each in-place initialiser of
``torch.nn.init`` returns a fake tensor unchanged and runs as usual on a real one. Building is
not recorded, so the recorded program is the same either way.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import is_fake


def _in_place_initialisers() -> list[str]:
    return sorted(name for name, value in vars(torch.nn.init).items()
                  if name.endswith("_") and not name.startswith("_") and callable(value))


def _skipping_fake(initialiser: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(initialiser)
    def initialise(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(tensor, torch.Tensor) and is_fake(tensor):
            return tensor
        return initialiser(tensor, *args, **kwargs)

    return initialise


@contextlib.contextmanager
def initialisers_skip_fake_tensors() -> Iterator[None]:
    originals = {name: getattr(torch.nn.init, name) for name in _in_place_initialisers()}
    for name, initialiser in originals.items():
        setattr(torch.nn.init, name, _skipping_fake(initialiser))
    try:
        yield
    finally:
        for name, initialiser in originals.items():
            setattr(torch.nn.init, name, initialiser)
