"""Chakra ETs that ddlsim wrote from an analytic workload (`analytic_export`), read back as its graph.

    trace = load_chakra("et/")                 # an `AnalyticTrace` for such files
    result = trace.simulate_on(fabric, algorithm, device, settings)

The iteration graph comes back op for op from the ``ddlsim.op`` records (the first rank file of
each stage holds them for that stage's ops): compute keeps the time it was exported with, whatever the
device; every collective is priced again on the fabric at hand with its algorithm and the
device's reductions. The graph is placed and summed up as the analytic run places it
(`ddlsim.training.simulate.placed`, with the exported overlap and the importer's contention
setting), so on the same device the iteration time is the analytic run's, within floating
rounding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddlsim.capture.simulation import ProgramResult
from ddlsim.chakra.checks import check_graph
from ddlsim.chakra.files import attribute, read_et, read_et_digest
from ddlsim.chakra.graph_records import FORMAT, compute_estimate_of, settings_of, task_of, workload_of
from ddlsim.chakra.schema import ANALYTIC_ATTR, NODES_SHA256_ATTR, OP_ATTR, RANK_ATTR, STAGE_ATTR
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import CollectiveCall, CollectiveEstimate
from ddlsim.core.work import Workload
from ddlsim.training.energy import network_energy
from ddlsim.training.graph import IterationGraph, OpKind
from ddlsim.training.pricing import Pricer
from ddlsim.training.run import network_timer, reduction_model
from ddlsim.training.settings import TrainingSettings
from ddlsim.training.simulate import TrainingResult, at_scale, peak_of, placed
from ddlsim.training.timeline import summarize


class AnalyticTraceResult(ProgramResult):
    """The training result of an analytic trace: its graph and placement kept (for ``trace.json``),
    throughput as the analytic model's (`TrainingResult.samples_per_s`)."""

    samples_per_s = TrainingResult.samples_per_s


@dataclass(frozen=True)
class AnalyticTrace:
    """An analytic workload's iteration graph as its Chakra ETs hold it (module docstring)."""

    workload: Workload
    header: dict[str, Any]
    ops: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def num_ranks(self) -> int:
        return self.workload.num_ranks

    def settings(self, base: TrainingSettings | None = None) -> TrainingSettings:
        """The exported overlap, buckets and schedule on top of `base` (the importer's contention)."""
        return settings_of(self.header, base)

    def graph(self, price: Any) -> IterationGraph:
        """The graph again: compute at its exported estimate, each collective at ``price(call)``."""
        graph = IterationGraph()
        for record in self.ops:
            task = task_of(record)
            common = dict(executions=int(record["executions"]), stream=record["stream"],
                          deps=tuple(int(dep) for dep in record["deps"]), label=record["label"],
                          stage=int(record["stage"]))
            if record["kind"] == OpKind.COMPUTE.value:
                graph.add_compute(task, compute_estimate_of(record), **common)
            else:
                assert isinstance(task, CollectiveCall)
                graph.add_collective(task, price(task), **common)
        return graph

    def simulate_on(self, fabric: Any, algorithm: Any, device: Any, settings: TrainingSettings | None = None
                    ) -> AnalyticTraceResult:
        """Price the trace on built objects (the train task's hook, and `ddlsim.simulate`'s)."""
        nodes = getattr(fabric, "num_nodes", None)
        if isinstance(nodes, int) and self.num_ranks > nodes:
            name = getattr(fabric, "name", fabric)
            raise InfeasibleError(f"the trace has {self.num_ranks} ranks but fabric {name!r} has {nodes} nodes"
                                  f" ({self.num_ranks - nodes} too many); use a larger fabric")
        settings = self.settings(settings)
        pricer = Pricer(network_timer(fabric, algorithm, reduction_model(device)), lambda task: None)
        graph = self.graph(pricer.collective)
        placement = placed(graph, settings, fabric)
        summary, costs, failures = at_scale(summarize(graph, placement), self.workload, settings, device)
        energy = network_energy(fabric, self.num_ranks, summary.iteration_time_s, self.workload.num_steps)
        return AnalyticTraceResult(workload=self.workload, settings=settings, iteration=summary, energy=energy,
                                   graph=graph, placement=placement, peak_flop_per_s=peak_of(device, self.workload),
                                   at_scale=costs, failures=failures)

    def to_chakra(self, directory: str | Path, *, ranks: str = "all") -> list[Path]:
        """Write the trace again (``training.chakra=true`` on ``model=chakra``)."""
        from ddlsim.chakra.analytic_export import write_workload_chakra

        def unpriced(call: CollectiveCall) -> CollectiveEstimate:  # the export reads no collective price
            return CollectiveEstimate(op=call.op, size_bytes=call.size_bytes, group_size=call.group.size,
                                      algorithm="none", fabric="", time_s=0.0, latency_s=0.0, transfer_s=0.0,
                                      compute_s=0.0, num_steps=0)

        return write_workload_chakra(self.workload, self.graph(unpriced), directory, settings=self.settings(),
                                     ranks=ranks)


def _json(text: str, key: str, file: Path, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise ConfigError(key, str(file), f"has a broken {what} record ({error})") from None


def analytic_trace(trace: str, files: list[Path], key: str = "trace") -> AnalyticTrace:
    """The `AnalyticTrace` of files that `analytic_export` wrote (`load.load_chakra` calls this):
    every file's header must be the same export's and name the file's rank and stage, and every
    file's nodes must match the SHA-256 its header records (a truncated, corrupted or swapped file
    of any rank is refused); the first rank of each stage holds its ops."""
    text = attribute(read_et(files[0], header_only=True)[0], ANALYTIC_ATTR)
    header = _json(text, key, files[0], "workload")
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else None
        raise ConfigError(key, str(files[0]), f"holds an analytic workload of format {found!r}; this ddlsim reads "
                                              f"{FORMAT!r}")
    if int(header["num_ranks"]) != len(files):
        raise ConfigError(key, trace, f"holds {len(files)} rank files but the workload ran on {header['num_ranks']} "
                                      "ranks")
    stage_ranks = len(files) // int(header["stages"])
    records: dict[int, dict[str, Any]] = {}
    changed: list[Path] = []  # files whose nodes are not the ones the export wrote
    for rank, file in enumerate(files):
        file_header, nodes, digest = read_et_digest(file, with_nodes=rank % stage_ranks == 0)
        check_graph(file, nodes)
        if (attribute(file_header, ANALYTIC_ATTR) != text or attribute(file_header, STAGE_ATTR) != rank // stage_ranks
                or attribute(file_header, RANK_ATTR) != rank):
            raise ConfigError(key, str(file), f"is not rank {rank} of the export {files[0].name} belongs to; export "
                                              "every rank again (write_workload_chakra)")
        if attribute(file_header, NODES_SHA256_ATTR) != digest:
            changed.append(file)
        for node in nodes:
            record_text = attribute(node, OP_ATTR)
            if record_text is not None:
                record = _json(record_text, key, file, f"op (node {node.id})")
                records[int(record["index"])] = record
    expected = int(header["num_ops"])
    missing = sorted(set(range(expected)) - set(records))
    if missing or len(records) != expected:
        raise ConfigError(key, trace, f"misses op {missing[0] if missing else expected} of the {expected} ops of the "
                                      "analytic graph; export every rank again (write_workload_chakra)")
    if changed:
        raise ConfigError(key, str(changed[0]), f"is truncated or changed since the export ({len(changed)} of the "
                                                f"{len(files)} rank files): its nodes do not match the SHA-256 its "
                                                "header records; export every rank again (write_workload_chakra)")
    return AnalyticTrace(workload=workload_of(header), header=header,
                         ops=tuple(records[index] for index in range(expected)))
