"""One job's collective calls as phases on the fabric's own links (`step_loads.py`), memoised per call.

    demand = LinkDemand(fabric)                     # the fabric's own placement of the job
    demand = LinkDemand(fabric, placement)          # job rank r on fabric node placement.nodes[r]
    phases = demand.phases(call, "ring", first_rank=stage * stage_ranks, job_ranks=stages * stage_ranks)

`first_rank` shifts a call's ranks within the job: a pipeline stage's calls are laid out over that
stage's ranks only (their `GroupLayout` counts ``stage_ranks``), so stage s's copy runs on job ranks
``s * stage_ranks + r``, wrapping around the job (the last stage's send goes to the first). The
algorithm is the one that priced the call (`CollectiveEstimate.algorithm`), rebuilt by name; a name
that does not build, or a schedule that the shifted placement refuses, gives phases without loads
(the call runs at its own pace).
"""

from __future__ import annotations

import numpy as np

from ddlsim.core.caches import Memo
from ddlsim.core.errors import DdlsimError
from ddlsim.core.registry import build
from ddlsim.core.types import CollectiveCall, CollectiveOp
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.contention.step_loads import CallPhases, call_phases
from ddlsim.network.estimate import StepPricer
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placement import Placement
from ddlsim.network.placing import place_ranks

NO_LOADS = CallPhases(())


class LinkDemand:
    """The phases of a job's calls on `fabric`'s links, its ranks at `placement` (the fabric's own
    placement when None)."""

    def __init__(self, fabric: Fabric, placement: Placement | None = None) -> None:
        self.fabric = fabric
        self.placement = placement
        self.pricer = StepPricer(fabric)
        self._phases = Memo(f"network.contention.links.{fabric.name}", maxsize=4096)
        self._algorithms: dict[str, object] = {}

    def phases(self, call: CollectiveCall, algorithm: str, first_rank: int = 0, job_ranks: int | None = None
               ) -> CallPhases:
        """`call` run by `algorithm` with its ranks shifted by `first_rank` in a job of `job_ranks`."""
        key = (call.op, call.size_bytes, call.group, call.root, algorithm, first_rank, job_ranks)
        found = self._phases.get(key)
        if found is None:
            found = self._phases.put(key, self._build(call, algorithm, first_rank, job_ranks))
        return found

    def _build(self, call: CollectiveCall, name: str, first_rank: int, job_ranks: int | None) -> CallPhases:
        layout = call.group
        if layout.size < 2 or call.size_bytes == 0 or call.op is CollectiveOp.BARRIER:
            return NO_LOADS
        try:
            placement = self._placement(layout.job_ranks, first_rank, job_ranks)
            algorithm = self._algorithm(name)
            request = ScheduleRequest(call.op, layout.size, call.root, call.size_bytes, self.fabric, layout,
                                      placement)
            schedule = self.fabric.prepare(algorithm.compact(request), layout, placement)
            return call_phases(self.fabric, schedule, layout, placement, call.size_bytes, self.pricer)
        except (DdlsimError, KeyError, ValueError, NotImplementedError):
            return NO_LOADS

    def _algorithm(self, name: str) -> object:
        if name not in self._algorithms:
            self._algorithms[name] = build("collective", name)
        return self._algorithms[name]

    def _placement(self, ranks: int, first_rank: int, job_ranks: int | None) -> Placement:
        """Where the call's `ranks` job ranks sit once shifted by `first_rank`."""
        whole = self.placement
        if first_rank == 0 and (whole is None or whole.num_ranks == ranks):
            return whole if whole is not None else place_ranks(self.fabric, ranks)
        total = whole.num_ranks if whole is not None else max(job_ranks or 0, first_rank + ranks)
        whole = whole if whole is not None else place_ranks(self.fabric, total)
        shifted = (first_rank + np.arange(ranks, dtype=np.int64)) % whole.num_ranks
        return Placement(ranks, whole.node_of(shifted))
