"""`task=search`: the best parallel plans of a decoder LLM on one fabric, for each GPU budget.

For every budget in `task.gpus` the search enumerates plans (tensor, context, pipeline, virtual
stages, data, expert, ZeRO, micro-batch, recompute; `search_space.py`), then for each valid one:

1. partitions it and checks memory (`check_plan`'s arithmetic): plans that do not fit are
   rejected by the memory bound and never priced;
2. computes a lower bound on its iteration time (`search_bounds.py`: compute on the longest
   chain of steps, plus the physical bound of the gradient reduction where available);
3. prices plans in increasing order of that bound (build the workload, `simulate_training`) and
   stops when the next bound reaches the `top`-th best time found: every plan left is slower
   than those, so the `top` best plans and their order are exact.

Rows: the `top` best plans per budget, each with `plan_rank` (1 = fastest on this fabric for
this budget), `pareto` (on the front of time against GPUs over the budgets), `gpus` and
`lower_bound_s`, plus every column of `task=train`. The summary prints the best plan per budget,
the Pareto table and the counts: enumerated, invalid (a rule), over memory, pruned by the time
bound, priced. `task.prune=false` prices every plan that fits (the brute force the tests compare
with). Run over several fabrics with `ddlsim -m experiment=search fabric=ramp,superpod`: the
sweep's gathered report says which fabric wins when each uses its best plan (`ddlsim/report/search_tables.py`).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tqdm import tqdm

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import TASKS
from ddlsim.report.search_tables import search_summary
from ddlsim.tasks.base import Components, Row, TaskResult
from ddlsim.tasks.search_bounds import ComputeBound
from ddlsim.tasks.search_rules import broken_rules
from ddlsim.tasks.search_space import PlanKey, SearchSpace, enumerate_plans
from ddlsim.tasks.train import TrainTask, TrainTaskConfig, run_labels
from ddlsim.training import Overlap, Pricer, TrainingSettings, simulate_training
from ddlsim.training.run import compute_timer, network_timer, reduction_model
from ddlsim.training.settings import run_settings
from ddlsim.workload.transformer.memory import check_fits
from ddlsim.workload.transformer.plan import partition_decoder
from ddlsim.workload.transformer.shape import DecoderShape

# A priced plan whose compute falls this far below its bound means the bound does not hold for
# this compute model; the search then prices every plan it had pruned.
BOUND_SLACK = 1e-9


@dataclass
class SearchTaskConfig:
    """`gpus`: GPU budgets (each plan uses exactly that many). Lists of degrees to try: `tensor`,
    `pipeline` ([]: every divisor of the layers up to `max_pipeline`), `virtual_stages`,
    `context`, `expert` ([]: powers of two dividing the experts up to `max_expert`, 1 for dense
    models), `zero`, `micro_batch`, `recompute`; `sequence_parallel` with TP > 1; `uneven_stages`:
    also pipelines that do not divide the layers and fewer layers on the end stages
    (`search_space.py`). `top`: plans
    kept (ranked) per budget. `prune`: skip plans whose lower bound cannot beat the `top`-th
    best. `collectives`: per-fabric collective algorithm, as in `task=train`."""

    name: str = "search"
    gpus: list[int] = field(default_factory=lambda: [1024])
    tensor: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    pipeline: list[int] = field(default_factory=list)
    max_pipeline: int = 16
    virtual_stages: list[int] = field(default_factory=lambda: [1, 2, 4])
    context: list[int] = field(default_factory=lambda: [1, 2, 4])
    expert: list[int] = field(default_factory=list)
    max_expert: int = 64
    zero: list[int] = field(default_factory=lambda: [0, 1, 2, 3])
    micro_batch: list[int] = field(default_factory=lambda: [1, 2])
    recompute: list[str] = field(default_factory=lambda: ["none", "selective", "full"])
    sequence_parallel: bool = True
    uneven_stages: bool = True
    top: int = 10
    prune: bool = True
    progress: bool = True
    collectives: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchStats:
    """What one search did: plans by fate, and where the time went (`evaluate_s`, `price_s`: CPU
    seconds, `time.process_time`, so that a loaded machine does not change the rate it reports)."""

    enumerated: int = 0
    invalid: int = 0
    over_memory: int = 0
    pruned: int = 0
    priced: int = 0
    evaluate_s: float = 0.0
    price_s: float = 0.0
    bound_violations: int = 0

    @property
    def evaluated(self) -> int:
        """Plans considered and settled by a bound (memory or time) or by pricing."""
        return self.over_memory + self.pruned + self.priced

    @property
    def seconds(self) -> float:
        return self.evaluate_s + self.price_s

    def add(self, other: SearchStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True)
class Priced:
    key: PlanKey
    lower_bound_s: float
    row: Row

    @property
    def time_s(self) -> float:
        return float(self.row["iteration_time_s"])


class PlanSearch:
    """The search of one model on one fabric and device; owns its price and bound caches."""

    def __init__(self, model: Any, device: Any, compute: Any, fabric: Any, algorithm: Any,
                 settings: TrainingSettings, space: SearchSpace, *, top: int = 10, prune: bool = True,
                 progress: bool = False) -> None:
        shape = getattr(model, "decoder", None)
        if not isinstance(shape, DecoderShape):
            raise ConfigError("model", getattr(model, "name", model),
                              "task=search searches decoder LLM plans: use model=gpt or a decoder of model=hf")
        if top < 1:
            raise ConfigError("task.top", top, "must be >= 1")
        self.model, self.shape, self.device, self.fabric = model, shape, device, fabric
        self.settings, self.space, self.top, self.prune, self.progress = settings, space, top, prune, progress
        self.pricer = Pricer(network_timer(fabric, algorithm, reduction_model(device)), compute_timer(compute))
        self.bounds = ComputeBound(model, self.pricer, device.memory_bytes)
        self.precision = model.precision
        self.grad_precision = getattr(model, "grad_precision", model.precision)
        self.grad_bytes = self.grad_precision.bytes_per_element

    def evaluate(self, gpus: int, stats: SearchStats) -> list[tuple[float, PlanKey, Any]]:
        """Feasible plans on `gpus` GPUs with their lower bounds, in pricing order."""
        enumeration = enumerate_plans(self.space, self.shape, self.model.global_batch, gpus)
        stats.enumerated += enumeration.enumerated
        stats.invalid += enumeration.invalid
        memory = self.device.memory_bytes
        feasible = []
        for key in tqdm(enumeration.candidates, desc=f"plans on {gpus} GPUs", unit="plan", leave=False,
                        disable=not self.progress or len(enumeration.candidates) < 2000 or None):
            try:
                plan = partition_decoder(self.shape, key.parallel(), memory, self.model.global_batch,
                                         check_memory=False, precision=self.precision,
                                         grad_precision=self.grad_precision)
            except ConfigError:
                stats.invalid += 1
                continue
            except InfeasibleError:
                stats.over_memory += 1
                continue
            try:
                check_fits(plan.stages, plan.layout, plan.options, memory)
            except InfeasibleError:
                stats.over_memory += 1
                continue
            bound = self.bounds.bound_s(key, plan)
            if self.settings.overlap is Overlap.NONE:
                bound += self.bounds.comm_bound_s(self.fabric, plan, self.grad_bytes)
            feasible.append((bound, key, plan))
        feasible.sort(key=lambda item: (item[0], item[1]))
        return feasible

    def price(self, key: PlanKey) -> Row:
        workload = self.model.build_workload(key.parallel(), self.device.memory_bytes)
        return simulate_training(workload, self.pricer, self.settings, fabric=self.fabric, device=self.device).row()

    def search(self, gpus: int) -> tuple[list[Priced], SearchStats]:
        """The `top` best plans on `gpus` GPUs, fastest first, and what the search did.

        Best first over two bounds: plans wait in a heap by bound; a plan with a compute bound
        below the `top`-th best time gets its refined bound (collectives priced) and goes back;
        one with a refined bound below it is priced. The first plan whose bound reaches that time
        ends the search: no plan left can enter the `top`.
        """
        stats = SearchStats()
        start = time.process_time()
        feasible = self.evaluate(gpus, stats)
        stats.evaluate_s = time.process_time() - start
        start = time.process_time()
        heap = [(bound, 0, key, plan) for bound, key, plan in feasible]  # already in heap order (sorted)
        priced: list[Priced] = []
        fastest: list[float] = []  # the `top` best times so far, ascending
        gradient_reduction = self.settings.overlap is Overlap.NONE
        bar = tqdm(total=len(heap), desc=f"pricing on {gpus} GPUs", unit="plan", leave=False,
                   disable=not self.progress or len(heap) < 200 or None)
        while heap:
            bound, level, key, plan = heap[0]
            if self.prune and len(fastest) == self.top and bound >= fastest[-1]:
                stats.pruned += len(heap)  # every plan left is bounded at least as high
                bar.update(len(heap))
                break
            heapq.heappop(heap)
            if level == 0 and self.prune:
                refined = max(bound, self.bounds.refined_bound_s(key, plan, self.precision, self.grad_precision,
                                                                 gradient_reduction))
                heapq.heappush(heap, (refined, 1, key, plan))
                continue
            item = Priced(key, bound, self.price(key))
            bar.update(1)
            stats.priced += 1
            priced.append(item)
            if item.time_s < bound * (1 - BOUND_SLACK) and self.prune:
                stats.bound_violations += 1
                self.prune = False  # the bound failed for this compute model: price everything
            bisect.insort(fastest, item.time_s)
            del fastest[self.top:]
        bar.close()
        stats.price_s = time.process_time() - start
        best = sorted(priced, key=lambda item: (item.time_s, item.key))[:self.top]
        return best, stats


def pareto_flags(best_by_gpus: dict[int, float]) -> dict[int, bool]:
    """A budget is on the front when its best time beats every smaller budget's."""
    flags, fastest = {}, math.inf
    for gpus in sorted(best_by_gpus):
        flags[gpus] = best_by_gpus[gpus] < fastest
        fastest = min(fastest, best_by_gpus[gpus])
    return flags


def search_rows(search: PlanSearch, budgets: list[int], labels: Row) -> tuple[list[Row], SearchStats]:
    """Rows of the best plans of every budget (`plan_rank`, `pareto`, `gpus`, `lower_bound_s`)."""
    rows, total = [], SearchStats()
    best: dict[int, list[Priced]] = {}
    for gpus in budgets:
        plans, stats = search.search(gpus)
        total.add(stats)
        if plans:
            best[gpus] = plans
    objective = "time_to_accuracy_s" if search.model.num_steps > 0 else "iteration_time_s"
    front = pareto_flags({gpus: float(plans[0].row[objective]) for gpus, plans in best.items()})
    for gpus, plans in best.items():
        for rank, item in enumerate(plans, start=1):
            rows.append({**labels, "status": "ok", **item.row, "gpus": gpus, "plan_rank": rank,
                         "pareto": rank == 1 and front[gpus], "lower_bound_s": item.lower_bound_s,
                         "search_objective": objective})
    return rows, total


@TASKS.register("search", SearchTaskConfig)
@dataclass(frozen=True)
class SearchTask:
    """The best parallel plans of a decoder LLM on the fabric for each GPU budget (ranked rows, Pareto table)."""

    reads: ClassVar[tuple[str, ...]] = ("model", "device", "compute", "fabric", "collective", "training")  # own plans

    gpus: tuple[int, ...]
    space: SearchSpace
    top: int
    prune: bool
    progress: bool
    train: TrainTask
    name: str = "search"

    @classmethod
    def from_config(cls, config: SearchTaskConfig) -> SearchTask:
        if not config.gpus or any(not isinstance(gpus, int) or gpus < 1 for gpus in config.gpus):
            raise ConfigError("gpus", list(config.gpus), "must list GPU budgets >= 1")
        if config.top < 1:
            raise ConfigError("top", config.top, "must be >= 1")
        space = SearchSpace(tuple(config.tensor), tuple(config.pipeline), config.max_pipeline,
                            tuple(config.virtual_stages), tuple(config.context), tuple(config.expert),
                            config.max_expert, tuple(config.zero), tuple(config.micro_batch),
                            tuple(config.recompute), config.sequence_parallel, config.uneven_stages)
        train = TrainTask.from_config(TrainTaskConfig(collectives=dict(config.collectives)))
        return cls(tuple(sorted(set(config.gpus))), space, config.top, config.prune, config.progress, train)

    def run(self, components: Components) -> TaskResult:
        settings = run_settings(components.config)
        labels = run_labels(components.config)
        algorithm, label = self.train.algorithm_for(components)
        if label is not None:
            labels["algorithm"] = label
        search = PlanSearch(components.model, components.device, components.compute, components.fabric, algorithm,
                            settings, self.space, top=self.top, prune=self.prune, progress=self.progress)
        rows, stats = search_rows(search, list(self.gpus), labels)
        if not rows:
            rules = broken_rules(self.space, search.shape, components.model.global_batch, list(self.gpus)) \
                if stats.invalid else ""
            raise InfeasibleError(f"no plan of {components.model.name} fits {components.device.name} on "
                                  f"{', '.join(map(str, self.gpus))} GPUs ({stats.enumerated} enumerated, "
                                  f"{stats.invalid} invalid, {stats.over_memory} over memory)"
                                  + (f": {rules}" if rules else ""))
        return TaskResult(rows=rows, summary=search_summary(rows, stats))
