"""A process group's ranks as a ddlsim group layout: size, stride and the ranks that tile it.

ddlsim prices every group of one kind at once (`ddlsim.core.types.GroupLayout`): ``size`` ranks
spaced ``stride`` apart, repeated over the job. A captured group is one concrete set of global
ranks; its layout is read from the spacing of those ranks. A device-mesh dimension always has
even spacing (size = the dimension, stride = the product of the later dimensions). Groups that
are not evenly spaced (a flattened pair of mesh dimensions that are not adjacent) keep their
size and take the smallest spacing as stride (`regular` is False), which the docs list as a
limit. A group spread wider than the job can tile (the first and the last pipeline stage)
keeps its true stride; it is priced with the widest stride that fits the job (`pricing_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.types import GroupLayout


@dataclass(frozen=True)
class GroupShape:
    """`size` ranks, `stride` apart; `num_ranks` ranks hold whole copies of this group side by side."""

    size: int
    stride: int
    num_ranks: int
    regular: bool = True


def group_shape(ranks: tuple[int, ...], world_size: int) -> GroupShape:
    """The layout of the group of global `ranks` inside a job of `world_size` ranks."""
    ordered = sorted(set(ranks))
    size = len(ordered)
    if size <= 1:
        return GroupShape(1, 1, world_size)
    gaps = {b - a for a, b in zip(ordered, ordered[1:])}
    stride = min(gaps)
    regular = len(gaps) == 1
    span = size * stride
    if span > world_size:  # e.g. the first and last pipeline stage: not a tiling of the job's ranks
        return GroupShape(size, stride, world_size, regular)
    return GroupShape(size, stride, world_size - world_size % span, regular)


def pricing_layout(size: int, stride: int, num_ranks: int) -> GroupLayout:
    """A `GroupLayout` for pricing a group: its stride, or the widest that fits `num_ranks`."""
    if size * stride > num_ranks:
        stride = max(1, num_ranks // size)
    span = size * stride
    return GroupLayout(size, stride, max(num_ranks - num_ranks % span, span))
