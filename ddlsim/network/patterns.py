"""Transfer patterns: who sends to whom in one step of ONE group, with relative byte weights.

A pattern is pure structure, written in group positions 0..n-1 and independent of the message
size: a step says how many bytes one unit of weight carries. Fabrics price a pattern once and
reuse the price for every step, repetition and message size that shares it (see `key`).

- `Pairs`: explicit arrays of (src, dst, weight), optionally with a class per pair. Classes let
  one pattern serve a run of steps in which only some pairs are active (a pipeline filling up,
  the levels of a tree): a step names the range of classes that is active.
- `Mesh`: every member sends to every other member of its block (a direct all-to-all inside
  each block). It is never listed pair by pair at scale (65,536 ranks would be 4.3e9 pairs);
  fabrics price it in closed form.

`multicast=True` says that every transfer leaving one source in this pattern carries the same
data, so a fabric that can replicate optically or in a switch may send it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.network.int_arrays import floor_mod, sorted_distinct

MAX_LISTED_PAIRS = 1 << 24


def _as_index_array(values: Any, name: str) -> np.ndarray:
    array = np.ascontiguousarray(values, dtype=np.int64)
    if array.ndim != 1:
        raise ConfigError(name, array.shape, "must be a one-dimensional array")
    return array


def class_order(classes: np.ndarray, num_classes: int) -> np.ndarray:
    """The stable sort order of `classes` (values in 0 .. num_classes - 1): as a small integer type
    when the classes are few, which numpy sorts by radix, the same order sooner."""
    small = classes.astype(np.int16) if num_classes < (1 << 15) else classes
    return np.argsort(small, kind="stable")


def content_key(*arrays: np.ndarray) -> str:
    """A digest of array contents, for patterns built without a structural key."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        digest.update(str(array.dtype).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


@dataclass(frozen=True, eq=False)
class PairArrays:
    """A pattern listed pair by pair: positions, weights and (optional) classes."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    classes: np.ndarray | None = None


class Pattern:
    """Base of every pattern; subclasses are frozen dataclasses with `group_size` and `key`."""

    group_size: int
    multicast: bool
    annotations: Mapping[str, Any]

    @property
    def num_classes(self) -> int:
        return 0

    @property
    def full_key(self) -> Hashable:
        """What a fabric's price cache is keyed on: type, size, multicast, structure, annotations."""
        raise NotImplementedError

    @property
    def circuit_key(self) -> Hashable:
        """Which connections the pattern uses (not how much each carries): equal keys, same circuits."""
        return (type(self).__name__, self.group_size, getattr(self, "key", None))

    def num_pairs(self) -> int:
        raise NotImplementedError

    def pairs(self) -> PairArrays:
        """Every (src, dst) pair with its weight; only for patterns small enough to list."""
        raise NotImplementedError

    def participants(self) -> np.ndarray:
        """Positions that send or receive in this pattern."""
        listed = self.pairs()
        return sorted_distinct(np.concatenate([listed.src, listed.dst]))


def _annotation_key(annotations: Mapping[str, Any]) -> Hashable:
    return tuple(sorted((str(name), repr(value)) for name, value in annotations.items()))


@dataclass(frozen=True, eq=False)
class Pairs(Pattern):
    """Explicit transfers src[i] -> dst[i] carrying weight[i] units each.

    `classes[i]` (0 <= class < num_classes) groups pairs into classes that a step activates
    by range. `key` names the structure (e.g. ``("ring", 1)``); without one, the arrays are
    digested, which costs a pass over them. `one_to_one` promises that no position sends or
    receives more than one transfer (a permutation step), which lets fabrics skip aggregation.
    `structure`, when set by a builder, names a regular shape a fabric may price in closed form:
    ``("xor", m)`` (every position p sends to p XOR m), ``("shift", d)`` (every position p sends
    to (p + d) mod n) or ``("dim_shift", (stride, size, d))`` (the shift by d along one dimension
    of `shift_pairs`), all with uniform weight. `validate=False` is for internal builders that
    pass int64 / float64 arrays they know to be valid.
    """

    group_size: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | float = 1.0
    classes: np.ndarray | None = None
    multicast: bool = False
    key: Hashable = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    one_to_one: bool = False
    structure: Hashable = None
    validate: bool = True

    def __post_init__(self) -> None:
        if not self.validate:
            self._trusted()
            return
        src = _as_index_array(self.src, "pattern.src")
        dst = _as_index_array(self.dst, "pattern.dst")
        if src.shape != dst.shape:
            raise ConfigError("pattern.dst", dst.shape, f"must match pattern.src's shape {src.shape}")
        n = self.group_size
        if src.size and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
            raise ConfigError("pattern", (int(src.min()), int(src.max())), f"positions must lie in [0, {n})")
        if np.any(src == dst):
            raise ConfigError("pattern", int(src[src == dst][0]), "a position cannot send to itself")
        weight = np.asarray(self.weight, dtype=np.float64)
        weight = np.full(src.shape, float(weight)) if weight.ndim == 0 else weight
        if weight.shape != src.shape:
            raise ConfigError("pattern.weight", weight.shape, f"needs one weight per pair ({src.size})")
        low_weight, high_weight = (float(weight.min()), float(weight.max())) if weight.size else (0.0, 0.0)
        if not (np.isfinite(low_weight) and np.isfinite(high_weight)) or low_weight < 0:
            raise ConfigError("pattern.weight", low_weight, "weights must be finite and >= 0")
        classes = None
        if self.classes is not None:
            classes = _as_index_array(self.classes, "pattern.classes")
            if classes.shape != src.shape or (classes.size and classes.min() < 0):
                raise ConfigError("pattern.classes", classes.shape, "needs one class >= 0 per pair")
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dst", dst)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "classes", classes)
        if self.key is None:
            arrays = [src, dst, weight] + ([classes] if classes is not None else [])
            object.__setattr__(self, "key", ("digest", content_key(*arrays)))
        object.__setattr__(self, "annotations", dict(self.annotations))
        # A structural key names the pairs; weights may still differ between steps that share it.
        weight_key = ("uniform", low_weight) if low_weight == high_weight else content_key(weight)
        object.__setattr__(self, "_weight_key", weight_key)

    def _trusted(self) -> None:
        """Arrays from an internal builder, already int64/float64 and valid: store without checks."""
        weight = self.weight
        if np.ndim(weight) == 0:
            weight_key = ("uniform", float(weight))
            object.__setattr__(self, "weight", uniform_array(float(weight), np.shape(self.src)))
        else:
            low, high = (float(weight.min()), float(weight.max())) if weight.size else (0.0, 0.0)
            weight_key = ("uniform", low) if low == high else content_key(weight)
        object.__setattr__(self, "_weight_key", weight_key)
        object.__setattr__(self, "annotations", dict(self.annotations))

    @property
    def num_classes(self) -> int:
        if self.classes is None or self.classes.size == 0:
            return 0
        return int(self.classes.max()) + 1

    @property
    def full_key(self) -> Hashable:
        return ("pairs", self.group_size, self.multicast, self.key, self._weight_key,
                _annotation_key(self.annotations))

    def num_pairs(self) -> int:
        return int(self.src.size)

    def pairs(self) -> PairArrays:
        return PairArrays(self.src, self.dst, self.weight, self.classes)

    def participants(self) -> np.ndarray:
        return sorted_distinct(np.concatenate([self.src, self.dst]))

    def select(self, low_class: int, high_class: int) -> Pairs:
        """The pairs whose class lies in [low_class, high_class], as a pattern of its own."""
        if self.classes is None:
            return self
        mask = (self.classes >= low_class) & (self.classes <= high_class)
        return Pairs(self.group_size, self.src[mask], self.dst[mask], self.weight[mask], None, self.multicast,
                     ("window", self.key, low_class, high_class), self.annotations, self.one_to_one, validate=False)


@dataclass(frozen=True, eq=False)
class Mesh(Pattern):
    """Every member sends `weight` units to every other member of its block.

    `blocks[p]` is position p's block id; a negative id leaves p out of the step.
    """

    group_size: int
    blocks: np.ndarray
    weight: float = 1.0
    multicast: bool = False
    key: Hashable = None
    annotations: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        blocks = _as_index_array(self.blocks, "pattern.blocks")
        if blocks.size != self.group_size:
            raise ConfigError("pattern.blocks", blocks.size, f"needs one block id per position ({self.group_size})")
        if not (np.isfinite(self.weight) and self.weight >= 0):
            raise ConfigError("pattern.weight", self.weight, "must be finite and >= 0")
        object.__setattr__(self, "blocks", blocks)
        if self.key is None:
            object.__setattr__(self, "key", ("digest", content_key(blocks)))
        object.__setattr__(self, "annotations", dict(self.annotations))

    @property
    def full_key(self) -> Hashable:
        return ("mesh", self.group_size, self.multicast, float(self.weight), self.key,
                _annotation_key(self.annotations))

    def block_sizes(self) -> np.ndarray:
        members = self.blocks[self.blocks >= 0]
        return np.bincount(members) if members.size else np.zeros(0, dtype=np.int64)

    def num_pairs(self) -> int:
        sizes = self.block_sizes()
        return int(np.sum(sizes * (sizes - 1)))

    def participants(self) -> np.ndarray:
        sizes = self.block_sizes()
        member = self.blocks >= 0
        member[member] = sizes[self.blocks[member]] > 1
        return np.flatnonzero(member)

    def pairs(self) -> PairArrays:
        count = self.num_pairs()
        if count > MAX_LISTED_PAIRS:
            raise ConfigError("pattern", count, f"a mesh of more than {MAX_LISTED_PAIRS} pairs cannot be listed")
        positions = np.flatnonzero(self.blocks >= 0)
        order = positions[np.argsort(self.blocks[positions], kind="stable")]
        sizes = self.block_sizes()
        sizes = sizes[sizes > 0]
        if sizes.size and int(sizes.min()) == int(sizes.max()):  # equal blocks: one block's pairs, for all blocks
            size = int(sizes[0])
            first, second = np.divmod(np.arange(size * size, dtype=np.int64), size)
            keep = first != second
            members = order.reshape(sizes.size, size)
            src = np.take(members, first[keep], axis=1).ravel()  # C order: ravel needs no copy
            dst = np.take(members, second[keep], axis=1).ravel()
            return PairArrays(src, dst, np.full(src.size, float(self.weight)))
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        # Block by block, every (member i, member j), i != j, with i outer: one pass over all blocks.
        squares = sizes * sizes
        block = np.repeat(np.arange(sizes.size), squares)
        local = np.arange(int(squares.sum()), dtype=np.int64) - np.repeat(np.cumsum(squares) - squares, squares)
        width = sizes[block]
        first, second = local // width, local % width
        keep = first != second
        src = order[starts[block[keep]] + first[keep]]
        dst = order[starts[block[keep]] + second[keep]]
        return PairArrays(src, dst, np.full(src.size, float(self.weight)))


def dim_coordinates(positions: np.ndarray, stride: int, size: int) -> np.ndarray:
    """Coordinate of each position along the dimension of `size` members spaced `stride` apart."""
    scaled = positions if stride == 1 else positions // stride
    return floor_mod(scaled, size)


def shift_pairs(group_size: int, stride: int, size: int, offset: int, *, positions: np.ndarray | None = None,
                classes: np.ndarray | None = None, weight: np.ndarray | float = 1.0,
                multicast: bool = False, key_extra: Hashable = None) -> Pairs:
    """Each position sends to the member `offset` further along its dimension (cyclically).

    Positions are read in mixed radix: ``p = low + stride * (coordinate + size * high)``. With
    ``stride=1, size=n`` this is a ring over the whole group. `positions` restricts the senders.
    """
    if positions is None and classes is None and np.ndim(weight) == 0 and not multicast:
        arguments = (group_size, stride, size, offset % size, float(weight), key_extra)
        return _FULL_SHIFTS.get_or_make(arguments, lambda: _full_shift(*arguments))
    if positions is None:
        positions = np.arange(group_size, dtype=np.int64)
    coordinate = dim_coordinates(positions, stride, size)
    dst = positions + ((coordinate + offset) % size - coordinate) * stride
    key = ("shift", stride, size, offset % size, key_extra)
    return Pairs(group_size, positions, dst, weight, classes, multicast, key, one_to_one=True)


_FULL_SHIFTS = PROCESS_CACHES.memo("network.full_shifts", maxsize=64)


def _full_shift(group_size: int, stride: int, size: int, offset: int, weight: float, key_extra: Hashable) -> Pairs:
    positions = positions_of(group_size)
    if stride == 1 and size == group_size:
        dst = positions + offset
        dst[dst >= group_size] -= group_size
        structure = ("shift", offset)
    else:
        coordinate = dim_coordinates(positions, stride, size)
        moved = coordinate + offset
        moved[moved >= size] -= size
        dst = positions + (moved - coordinate) * stride
        structure = ("dim_shift", (stride, size, offset))
    key = ("shift", stride, size, offset, key_extra)
    return Pairs(group_size, positions, dst, weight, key=key, one_to_one=True, structure=structure, validate=False)


def positions_of(group_size: int) -> np.ndarray:
    """0..n-1, shared read-only by the structured patterns of one group size (no fresh array each)."""
    positions = _POSITIONS.get(group_size)
    if positions is None:
        positions = np.arange(group_size, dtype=np.int64)
        positions.flags.writeable = False
        _POSITIONS.put(group_size, positions)
    return positions


def uniform_array(value: float, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only array of one value that takes no memory (a broadcast view)."""
    return np.broadcast_to(np.float64(value), shape)


_POSITIONS = PROCESS_CACHES.memo("network.positions", maxsize=16)


class XorPairs(Pairs):
    """A full XOR pattern whose destinations (src XOR mask) are built on first use only: fabrics
    that price it in closed form never list them (at 2^20 ranks each would be 8 MB)."""

    @property  # type: ignore[override]
    def dst(self) -> np.ndarray:
        built = self.__dict__.get("_dst")
        if built is None:
            built = self.src ^ self.structure[1]
            object.__setattr__(self, "_dst", built)
        return built

    @dst.setter
    def dst(self, value: np.ndarray | None) -> None:
        object.__setattr__(self, "_dst", value)


def xor_pairs(group_size: int, mask: int, weight: float = 1.0) -> Pairs:
    """Every position p sends to p XOR mask (recursive halving/doubling on a power-of-two group).

    Its key is ("xor", mask) whoever builds it: a key chosen by a caller could name other pairs
    elsewhere, and fabrics cache prices by key (rhd once called bit b's pattern ("xor", b))."""
    return XorPairs(group_size, positions_of(group_size), None, float(weight), key=("xor", mask), one_to_one=True,
                    structure=("xor", mask), validate=False)


def dim_blocks(group_size: int, stride: int, size: int) -> np.ndarray:
    """Block id of each position for a mesh along one dimension (lines of `size` members)."""
    positions = np.arange(group_size, dtype=np.int64)
    return positions % stride + stride * (positions // (stride * size))
