"""`task=packet`: one point of a packet-level load experiment (OPSquare paper, Figs. 2 and 3).

The packet models of `ddlsim.network.packet` run one network (``opsquare``: OPSquare's optical
packet switch; ``leafspine``: the H100 leaf-spine with shared buffers) at `num_nodes` nodes, with
uniform random destinations of which a fraction `locality` stays inside the source's pod, each
node offering `load` of its injection bandwidth: `warmup` then `measure` of simulated time,
`packet_size` packets, the run's `seed`. One row: throughput (fraction of the node bandwidth),
loss ratio, mean / p99 / max latency, local and remote latencies and packet counts.

A load curve is a sweep of points (`experiment=opsquare_fig2_3`), so that sweeps resume and run
in parallel through the launcher (``hydra/launcher=local_parallel``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import TASKS
from ddlsim.tasks.base import Components, TaskResult


@dataclass
class PacketTaskConfig:
    """One (network, scale, locality, load) point."""

    name: str = "packet"
    network: str = "opsquare"
    num_nodes: int = 256
    locality: float = 0.0
    load: float = 0.5
    packet_size: str = "1500B"
    warmup: str = "20us"
    measure: str = "20us"
    buffer_policy: str = "shared"  # how a leaf-spine switch divides its buffer among ports


@TASKS.register("packet", PacketTaskConfig)
@dataclass(frozen=True)
class PacketTask:
    """One point of a packet-level load experiment: throughput, loss and latency (OPSquare Figs. 2-3)."""

    reads: ClassVar[tuple[str, ...]] = ()  # its own packet networks (`network`), not the fabric group

    network: str
    num_nodes: int
    locality: float
    load: float
    packet_bytes: int
    warmup_s: float
    measure_s: float
    buffer_policy: str
    name: str = "packet"

    @classmethod
    def from_config(cls, config: PacketTaskConfig) -> PacketTask:
        from ddlsim.network.packet.experiment import NETWORKS
        from ddlsim.network.packet.leafspine_model import BUFFER_POLICIES

        if config.network not in NETWORKS:
            raise ConfigError("network", config.network, f"must be one of {', '.join(NETWORKS)}")
        if config.num_nodes < 2:
            raise ConfigError("num_nodes", config.num_nodes, "must be >= 2")
        if not (math.isfinite(config.locality) and 0 <= config.locality <= 1):
            raise ConfigError("locality", config.locality, "must be a fraction in [0, 1]")
        if not (math.isfinite(config.load) and 0 < config.load <= 1):
            raise ConfigError("load", config.load, "must be a fraction in (0, 1]")
        if config.buffer_policy not in BUFFER_POLICIES:
            raise ConfigError("buffer_policy", config.buffer_policy, f"must be one of {', '.join(BUFFER_POLICIES)}")
        return cls(config.network, config.num_nodes, float(config.locality), float(config.load),
                   units.parse_size_bytes(config.packet_size, "packet_size", allow_zero=False),
                   units.parse_time_s(config.warmup, "warmup"),
                   units.parse_time_s(config.measure, "measure", allow_zero=False), config.buffer_policy)

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network.packet.experiment import LoadSweep, SweepPoint, run_point

        seed = int(components.config.get("seed", 0) or 0)
        sweep = LoadSweep(networks=(self.network,), scales=(self.num_nodes,), localities=(self.locality,),
                          loads=(self.load,), packet_bytes=self.packet_bytes, warmup_s=self.warmup_s,
                          measure_s=self.measure_s, seed=seed, leafspine_buffer_policy=self.buffer_policy)
        measured = run_point(sweep, SweepPoint(self.network, self.num_nodes, self.locality, self.load))
        wall_s = measured.pop("wall_s")
        measured.pop("cpu_s")
        summary = (f"{self.network} {self.num_nodes:,} nodes, locality {self.locality:g}, load {self.load:g}: "
                   f"throughput {measured['throughput']:.3f}, loss {measured['loss_ratio']:.3g}, mean latency "
                   f"{units.format_time_s(measured['latency_mean_s'])} ({wall_s:.1f} s)")
        return TaskResult(rows=[measured], summary=summary)
