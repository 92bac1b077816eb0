"""Where a RAMP-x plan meets a group: positions, information ranks and subgroups in positions.

RAMP-x builds its subgroups on node coordinates. When the nodes of a group form a box of the
RAMP fabric (x' groups, J' racks, Lambda' node numbers: what `placing.place_ranks` gives a job),
the plan uses that box and each position takes the information rank of its node. Otherwise
(a group spread over the fabric, or another fabric for verification) the plan uses the
dimensions `placement.job_dims` picks for the group size, with positions read in box order.

Block b of a collective is the data position b owns at the end (reduce-scatter) or at the
start (all-gather); its route through the steps follows the digits of the information rank
of position b, so every position ends with exactly its own block.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import InfeasibleError
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.collectives.rampx.plan import RampXPlan
from ddlsim.network.fabrics.ramp.fabric import RampFabric
from ddlsim.network.fabrics.ramp.placement import find_box, job_dims
from ddlsim.network.patterns import content_key
from ddlsim.network.placement import job_ranks

# Layouts of 65,536 ranks hold a few MB of subgroup tables: keep the 32 most recent.
_LAYOUTS = PROCESS_CACHES.memo("network.rampx_layouts", maxsize=32)


def _usable_shape(shape: tuple[int, int, int], fabric: RampFabric) -> bool:
    x, racks, lam = shape
    return lam % x == 0 and max(x, racks, lam // x) <= fabric.dims.x + 1


def group_shape(request: ScheduleRequest) -> tuple[tuple[int, int, int], np.ndarray] | None:
    """(x', J', Lambda') and the box-order node index of every position, or None if unsupported."""
    fabric = request.fabric
    n = request.group_size
    if isinstance(fabric, RampFabric):
        nodes = request.placement.node_of(job_ranks(request.layout, np.arange(n))[0])
        box = find_box(nodes, fabric.dims)
        if box is not None and _usable_shape(box[1], fabric):
            (g0, j0, lam0), (x, racks, lam) = box
            g, j, node_lam = fabric.dims.coords(nodes)
            return box[1], ((g - g0) * racks + (j - j0)) * lam + (node_lam - lam0)
        shape = job_dims(n, fabric.dims.x, fabric.dims.racks, fabric.dims.wavelengths)
    else:
        shape = None
    if shape is None:
        return None
    return shape, np.arange(n, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class RampXLayout:
    """A RAMP-x plan and the map between positions and information ranks."""

    plan: RampXPlan
    inforank: np.ndarray  # position -> information rank

    @classmethod
    def for_request(cls, request: ScheduleRequest, formulation: int) -> RampXLayout:
        found = group_shape(request)
        if found is None:
            raise InfeasibleError(f"RAMP-x cannot arrange {request.group_size} ranks as a RAMP "
                                  f"(groups x racks x node numbers) on {request.fabric.name}")
        shape, node_index = found
        key = (shape, formulation, content_key(node_index))
        layout = _LAYOUTS.get(key)
        if layout is None:
            plan = RampXPlan(*shape, formulation=formulation)
            layout = cls(plan, plan.rank_of_node[node_index])
            _LAYOUTS.put(key, layout)
        return layout

    @property
    def n(self) -> int:
        return self.plan.num_ranks

    @cached_property
    def position(self) -> np.ndarray:
        """Information rank -> position."""
        position = np.empty(self.n, dtype=np.int64)
        position[self.inforank] = np.arange(self.n, dtype=np.int64)
        return position

    @property
    def steps(self) -> tuple[int, ...]:
        return self.plan.active_steps

    def radix(self, step: int) -> int:
        return self.plan.radix(step)

    def below(self, step: int) -> int:
        """Blocks that share a prefix up to `step` included: product of the later radices."""
        return int(np.prod([self.plan.radix(s) for s in range(step + 1, 5)], dtype=np.int64))

    def digit(self, step: int, positions: np.ndarray) -> np.ndarray:
        return self.plan.digit(step, self.inforank[np.asarray(positions, dtype=np.int64)])

    def prefix(self, step: int, positions: np.ndarray) -> np.ndarray:
        """Information-rank digits of steps 1..step of `positions`, as one number."""
        return self.inforank[np.asarray(positions, dtype=np.int64)] // self.below(step)

    def blocks(self, step: int, prefix: int) -> np.ndarray:
        """Positions whose information rank has digits 1..step equal to `prefix`."""
        width = self.below(step)
        return self.position[prefix * width:(prefix + 1) * width]

    @cached_property
    def _peers(self) -> dict[int, np.ndarray]:
        return {step: self.position[self.plan.peers(step)[self.inforank]] for step in self.steps}

    def peers(self, step: int) -> np.ndarray:
        """Shape (n, radix): the position handling portion p of each position's step subgroup."""
        return self._peers[step]

    def subgroup_ids(self, step: int) -> np.ndarray:
        """One block id per position (Table 5's subgroup id), for mesh patterns."""
        return self.plan.subgroup_ids(step)[self.inforank]

    def successor(self, positions: np.ndarray) -> np.ndarray:
        """Formulation 1's step-4 ring successor of `positions`."""
        ranks = self.inforank[np.asarray(positions, dtype=np.int64)]
        return self.position[self.plan.ring_successor(ranks)]

    def node_coords(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g, j, lam) inside the job of every position."""
        g, j, lam = self.plan.rank_coords()
        return g[self.inforank], j[self.inforank], lam[self.inforank]
