"""RAMP-x broadcast: a pipelined tree over RAMP's optical multicast (RAMP 6.1.5, Eq. 1).

SOA gating lets one transmitter reach every group at once, and a broadcast-and-select subnet
delivers a wavelength to every rack: the root reaches all nodes with its own node number
(x' J' of them) in one shot. Each other node number lam' then gets a forwarder among those
nodes, which multicasts on wavelength lam' to the x' J' nodes numbered lam'. The tree has
s = 3 levels (root, forwarders, the rest); the message is cut into k stages and pipelined,
so the broadcast takes k + s - 2 steps of m / k bytes.

Eq. 1 prints k = sqrt(m (s - 2) / alpha) beta, which is not dimensionless; the optimum of
(k + s - 2)(alpha + m beta / k) is k = sqrt(m (s - 2) beta / alpha), which ddlsim uses
(rounded to the better neighbouring integer). `eq1_as_printed` keeps the printed form.
"""

from __future__ import annotations

import math

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.rampx.layout import RampXLayout
from ddlsim.network.patterns import Pairs
from ddlsim.network.schedule import CompactStep

MAX_STAGES = 4096


def eq1_as_printed(size_bytes: float, levels: int, alpha_s: float, s_per_byte: float) -> float:
    return math.sqrt(size_bytes * (levels - 2) / alpha_s) * s_per_byte


def pipeline_time_s(stages: int, size_bytes: float, levels: int, alpha_s: float, s_per_byte: float) -> float:
    """(k + s - 2)(alpha + m beta / k): the model Eq. 1 optimises."""
    return (stages + levels - 2) * (alpha_s + size_bytes * s_per_byte / stages)


def pipeline_stages(size_bytes: float, levels: int, alpha_s: float, s_per_byte: float,
                    max_stages: int = MAX_STAGES) -> int:
    """k of Eq. 1 (dimensionally consistent form), at least 1 and at most `max_stages`."""
    if levels < 2:
        raise ConfigError("levels", levels, "a broadcast tree has at least 2 levels")
    if alpha_s <= 0 or size_bytes <= 0 or levels == 2:
        return 1
    best = math.sqrt(size_bytes * (levels - 2) * s_per_byte / alpha_s)
    candidates = {max(1, min(max_stages, value)) for value in (math.floor(best), math.ceil(best))}
    return min(candidates, key=lambda k: (pipeline_time_s(k, size_bytes, levels, alpha_s, s_per_byte), k))


def tree(lay: RampXLayout, root: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """(level-1 positions, forwarder -> its receivers). Level 1 shares the root's node number."""
    _, _, lam = lay.node_coords()
    positions = np.arange(lay.n, dtype=np.int64)
    first = positions[(lam == lam[root]) & (positions != root)]
    others = sorted(set(lam.tolist()) - {int(lam[root])})
    forwarding: dict[int, list[np.ndarray]] = {}
    for index, number in enumerate(others):
        forwarder = int(first[index % first.size]) if first.size else root
        forwarding.setdefault(forwarder, []).append(positions[lam == number])
    return first, {sender: np.concatenate(parts) for sender, parts in forwarding.items()}


def levels_of(lay: RampXLayout, root: int) -> int:
    first, forwarding = tree(lay, root)
    return 3 if first.size and forwarding else 2


def broadcast(builder: ScheduleBuilder, lay: RampXLayout, stages: int) -> None:
    """Pipeline `stages` chunks down the tree: chunk c leaves the root in step c."""
    root = builder.request.root
    first, forwarding = tree(lay, root)
    relays = list(forwarding.items())
    if not first.size or not forwarding:  # a single level below the root
        receivers = np.concatenate([first, *forwarding.values()])
        _stage(builder, lay, [(root, receivers)], [0], stages, "rampx broadcast", stages)
        return
    _stage(builder, lay, [(root, first)], [0], 1, "rampx broadcast root", stages)
    if stages > 1:
        _stage(builder, lay, [(root, first)] + relays, [1] + [0] * len(relays), stages - 1,
               "rampx broadcast pipeline", stages)
    _stage(builder, lay, relays, [stages - 1] * len(relays), 1, "rampx broadcast last", stages)


def _stage(builder: ScheduleBuilder, lay: RampXLayout, parts: list[tuple[int, np.ndarray]], offsets: list[int],
           repeat: int, label: str, stages: int) -> None:
    """`repeat` identical multicast steps; in repetition r, part i sends chunk r + offsets[i]."""
    src = np.concatenate([np.full(receivers.size, sender, dtype=np.int64) for sender, receivers in parts])
    dst = np.concatenate([receivers for _, receivers in parts])
    pattern = Pairs(lay.n, src, dst, multicast=True)
    compact = CompactStep(pattern, builder.payload / stages, repeat, label=label)

    def explicit():
        for repetition in range(repeat):
            chunk = np.concatenate([np.full(receivers.size, repetition + offset, dtype=np.int64)
                                    for (_, receivers), offset in zip(parts, offsets)])
            yield builder.rows(src, dst, chunk, chunk, False, compact, True)

    builder.add(compact, explicit)
