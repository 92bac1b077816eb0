"""Split sizes for data-dependent MoE dispatch under a capture.

Which expert a token goes to depends on the router's output, which fake tensors do not have.
A program that needs the split sizes as Python numbers (for ``all_to_all_single``'s
``input_split_sizes``) calls ``ddlsim.capture.splits(counts, total)``: on real tensors it returns
``counts.tolist()``; under a capture it returns `total` rows divided over ``counts.numel()``
destinations uniformly, or in proportion to the ``expert_load`` weights given to
``ddlsim.capture(...)``. Programs with static shapes (capacity-based dispatch) need none of this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ddlsim.core.errors import ConfigError

_LOAD: list[tuple[float, ...] | None] = [None]


@contextlib.contextmanager
def expert_load_context(load: Sequence[float] | None) -> Iterator[None]:
    if load is not None:
        weights = tuple(float(weight) for weight in load)
        if not weights or any(weight < 0 for weight in weights) or sum(weights) <= 0:
            raise ConfigError("expert_load", list(load), "must be non-negative weights with a positive sum")
        load = weights
    _LOAD.append(load)
    try:
        yield
    finally:
        _LOAD.pop()


def proportional_split(total: int, weights: Sequence[float]) -> list[int]:
    """`total` split in proportion to `weights` (largest remainders), summing exactly to `total`."""
    scale = total / sum(weights)
    shares = [weight * scale for weight in weights]
    parts = [int(share) for share in shares]
    order = sorted(range(len(weights)), key=lambda i: (parts[i] - shares[i], i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def splits(counts: torch.Tensor, total: int) -> list[int]:
    """Split sizes: ``counts.tolist()`` for real tensors, the configured load under a capture."""
    if not isinstance(counts, FakeTensor):
        return [int(value) for value in counts.tolist()]
    destinations = counts.numel()
    load = _LOAD[-1]
    if load is None:
        load = (1.0,) * destinations
    if len(load) != destinations:
        raise ConfigError("expert_load", list(load), f"needs one weight per destination ({destinations})")
    return proportional_split(int(total), load)
