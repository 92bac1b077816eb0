"""The OPSquare paper's load experiment: throughput, loss and latency vs offered load.

`LoadSweep` names the points (network x scale x locality x load); `run_sweep` runs them, in
order or over several processes, and returns one row per point with the measured metrics and
the wall time of the point. Every point uses the same seed, so curves differ by load and
locality, not by noise; the same sweep gives the same numbers, bit for bit.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.network.packet.leafspine_model import LeafSpinePacketModel
from ddlsim.network.packet.opsquare_model import OpsquarePacketModel
from ddlsim.network.packet.reference import leafspine_params, opsquare_params
from ddlsim.network.packet.run_config import PacketRunConfig

NETWORKS = ("opsquare", "leafspine")
FULL_LOADS = tuple(round(0.1 * k, 1) for k in range(1, 11))
FULL_LOCALITIES = (0.0, 0.33, 0.67, 1.0)


@dataclass(frozen=True)
class SweepPoint:
    network: str
    num_nodes: int
    locality: float
    load: float


@dataclass(frozen=True)
class LoadSweep:
    networks: tuple[str, ...] = NETWORKS
    scales: tuple[int, ...] = (256, 1024)
    localities: tuple[float, ...] = FULL_LOCALITIES
    loads: tuple[float, ...] = FULL_LOADS
    packet_bytes: int = 1500
    warmup_s: float = 20e-6
    measure_s: float = 20e-6
    seed: int = 0
    leafspine_buffer_policy: str = "shared"

    def __post_init__(self) -> None:
        for network in self.networks:
            if network not in NETWORKS:
                raise ConfigError("networks", network, f"must be one of {', '.join(NETWORKS)}")

    def points(self) -> Iterator[SweepPoint]:
        for network in self.networks:
            for num_nodes in self.scales:
                for locality in self.localities:
                    for load in self.loads:
                        yield SweepPoint(network, num_nodes, locality, load)

    def run_config(self, point: SweepPoint) -> PacketRunConfig:
        return PacketRunConfig(load=point.load, locality=point.locality, packet_bytes=self.packet_bytes,
                               warmup_s=self.warmup_s, measure_s=self.measure_s, seed=self.seed)


def build_model(point: SweepPoint, run: PacketRunConfig, leafspine_buffer_policy: str = "shared"
                ) -> OpsquarePacketModel | LeafSpinePacketModel:
    if point.network == "opsquare":
        return OpsquarePacketModel(opsquare_params(point.num_nodes), run)
    return LeafSpinePacketModel(leafspine_params(point.num_nodes, leafspine_buffer_policy), run)


def run_point(sweep: LoadSweep, point: SweepPoint) -> dict[str, object]:
    """Run one point; the row holds the result's fields, `wall_s` and `cpu_s` (this process's CPU time)."""
    started, started_cpu = time.perf_counter(), time.process_time()
    model = build_model(point, sweep.run_config(point), sweep.leafspine_buffer_policy)
    result = model.run()
    row = {**result.as_row(), "wall_s": time.perf_counter() - started, "cpu_s": time.process_time() - started_cpu}
    # the model, its SimPy environment and the batches still in flight reference each other: free
    # the cycle now rather than at the next full collection, or a sweep holds several models' pools
    del model
    gc.collect()
    return row


def _run_indexed(args: tuple[LoadSweep, SweepPoint]) -> dict[str, object]:
    return run_point(*args)


def run_sweep(sweep: LoadSweep, *, jobs: int = 1,
              progress: Callable[[int, int, dict[str, object]], None] | None = None) -> list[dict[str, object]]:
    """Every point of `sweep`, in the order of `sweep.points()`."""
    if jobs < 1:
        raise ConfigError("jobs", jobs, "must be >= 1")
    points: Sequence[SweepPoint] = list(sweep.points())
    rows: list[dict[str, object]] = []
    if jobs == 1:
        for point in points:
            rows.append(run_point(sweep, point))
            if progress:
                progress(len(rows), len(points), rows[-1])
        return rows
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for row in pool.map(_run_indexed, [(sweep, point) for point in points]):
            rows.append(row)
            if progress:
                progress(len(rows), len(points), row)
    return rows
