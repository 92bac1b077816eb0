"""A RAMP-x plan: the subgroups and information map of one job, written in collective ranks.

`RampXPlan(x, racks, wavelengths, formulation)` numbers the job's nodes by the rank the
information map gives them (`infomap.collective_rank`) and lists, for every active step (one
whose subgroups have more than one member), each rank's subgroup ordered by the members'
information portion. Column `p` of ``peers(step)`` is therefore the member that handles
portion p, and a rank's own column is its digit of that step. Schedules only need this.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ddlsim.network.collectives.rampx.infomap import collective_rank, info_portion
from ddlsim.network.collectives.rampx.subgroups import (
    STEPS,
    check_dims,
    check_formulation,
    members,
    subgroup_id,
    subgroup_size,
)
from ddlsim.network.int_arrays import all_distinct


@dataclass(frozen=True)
class RampXPlan:
    """Subgroups of a job on x groups, `racks` racks and `wavelengths` node numbers."""

    x: int
    racks: int
    wavelengths: int
    formulation: int = 2

    def __post_init__(self) -> None:
        check_dims(self.x, self.racks, self.wavelengths)
        check_formulation(self.formulation)

    @property
    def num_ranks(self) -> int:
        return self.x * self.racks * self.wavelengths

    @property
    def device_groups(self) -> int:
        return self.wavelengths // self.x

    def radix(self, step: int) -> int:
        """Members per subgroup at `step` (Table 5's #NS)."""
        return subgroup_size(step, self.x, self.racks, self.wavelengths)

    @property
    def active_steps(self) -> tuple[int, ...]:
        """Steps with more than one member per subgroup, in order (RAMP 6.3)."""
        return tuple(step for step in STEPS if self.radix(step) > 1)

    @property
    def radices(self) -> tuple[int, ...]:
        return tuple(self.radix(step) for step in STEPS)

    # -- nodes and ranks -----------------------------------------------------------------------
    def node_coords(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g, j, lam) of the job's nodes in node order ``(g * J + j) * Lambda + lam``."""
        nodes = np.arange(self.num_ranks, dtype=np.int64)
        lam = nodes % self.wavelengths
        rest = nodes // self.wavelengths
        return rest // self.racks, rest % self.racks, lam

    @cached_property
    def rank_of_node(self) -> np.ndarray:
        g, j, lam = self.node_coords()
        ranks = collective_rank(self.formulation, g, j, lam, self.x, self.racks, self.wavelengths)
        if not all_distinct(ranks):  # guarded by tests; a broken formula must not pass silently
            raise AssertionError(f"information map is not a bijection for {self}")
        ranks.setflags(write=False)
        return ranks

    @cached_property
    def node_of_rank(self) -> np.ndarray:
        nodes = np.empty(self.num_ranks, dtype=np.int64)
        nodes[self.rank_of_node] = np.arange(self.num_ranks, dtype=np.int64)
        nodes.setflags(write=False)
        return nodes

    def rank_coords(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g, j, lam) of every rank, in rank order."""
        g, j, lam = self.node_coords()
        order = self.node_of_rank
        return g[order], j[order], lam[order]

    def digit(self, step: int, ranks: np.ndarray) -> np.ndarray:
        """A rank's information portion at `step` (its mixed-radix digit)."""
        weights = {4: 1, 3: self.device_groups, 2: self.device_groups * self.racks,
                   1: self.device_groups * self.racks * self.x}
        return (np.asarray(ranks, dtype=np.int64) // weights[step]) % self.radix(step)

    # -- subgroups -----------------------------------------------------------------------------
    def subgroup_ids(self, step: int) -> np.ndarray:
        """Table 5 id of every rank's subgroup at `step`, in rank order."""
        g, j, lam = self.rank_coords()
        return subgroup_id(step, self.formulation, g, j, lam, self.x, self.racks, self.wavelengths)

    def peers(self, step: int) -> np.ndarray:
        """Shape (ranks, radix): rank of the member handling portion p of each rank's subgroup."""
        g, j, lam = self.rank_coords()
        mg, mj, mlam = members(step, self.formulation, g, j, lam, self.x, self.racks, self.wavelengths)
        member_ranks = self.rank_of_node[(mg * self.racks + mj) * self.wavelengths + mlam]
        portions = info_portion(step, self.formulation, mg, mj, mlam, self.x, self.racks, self.wavelengths)
        ordered = np.empty_like(member_ranks)
        np.put_along_axis(ordered, portions, member_ranks, axis=1)
        return ordered

    def ring_successor(self, ranks: np.ndarray) -> np.ndarray:
        """Formulation 1's step-4 ring: the next member (Table 6, row 4.1) of each rank."""
        g, j, lam = self.rank_coords()
        mg, mj, mlam = members(4, 1, g, j, lam, self.x, self.racks, self.wavelengths)
        successor = self.rank_of_node[(mg[:, 1 % mg.shape[1]] * self.racks + mj[:, 0]) * self.wavelengths
                                      + mlam[:, 1 % mg.shape[1]]]
        return successor[np.asarray(ranks, dtype=np.int64)]
