"""`task=topoopt_cost`: TopoOpt Fig. 10, the interconnect cost of each architecture vs scale.

One row per (architecture, number of servers) for ``task.degree`` interfaces of
``task.link_bandwidth`` per server: capital cost and power from App. G's component counts and
Table 2's prices (`ddlsim.network.fabrics.topoopt.baselines.architecture_costs`). The paper does
not say which d and B its Fig. 10 uses; ``experiment=topoopt_fig10`` sweeps d = 4 and 8 at 100 Gb/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import TASKS
from ddlsim.report.quantities import format_number
from ddlsim.tasks.base import Components, TaskResult


@dataclass
class TopoOptCostTaskConfig:
    name: str = "topoopt_cost"
    num_servers: list[int] = field(default_factory=lambda: [16, 32, 64, 128, 256, 432, 1024, 2048, 4394])
    degree: int = 4
    link_bandwidth: str = "100Gbps"


@TASKS.register("topoopt_cost", TopoOptCostTaskConfig)
@dataclass(frozen=True)
class TopoOptCostTask:
    """Capital cost and power of TopoOpt and its baselines' interconnects (TopoOpt Fig. 10)."""

    reads: ClassVar[tuple[str, ...]] = ()

    num_servers: tuple[int, ...]
    degree: int
    link_bandwidth_bps: float
    name: str = "topoopt_cost"

    @classmethod
    def from_config(cls, config: TopoOptCostTaskConfig) -> TopoOptCostTask:
        if not config.num_servers or min(config.num_servers) < 2:
            raise ConfigError("num_servers", list(config.num_servers), "must list server counts >= 2")
        if config.degree < 1:
            raise ConfigError("degree", config.degree, "must be >= 1")
        return cls(tuple(int(n) for n in config.num_servers), config.degree,
                   units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth"))

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network.fabrics.topoopt.baselines import architecture_costs

        rows = []
        for servers in self.num_servers:
            for architecture, breakdown in architecture_costs(servers, self.degree, self.link_bandwidth_bps).items():
                rows.append({"fabric": architecture, "num_servers": servers, "degree": self.degree,
                             "link_bandwidth_bps": self.link_bandwidth_bps, "capex_usd": breakdown.capex_usd,
                             "power_w": breakdown.power_w, "status": "ok"})
        largest = [row for row in rows if row["num_servers"] == self.num_servers[-1]]
        summary = f"interconnect cost at {self.num_servers[-1]} servers, d = {self.degree}:\n" + "\n".join(
            f"  {row['fabric']:26s} {format_number(row['capex_usd'] / 1e6)} million USD" for row in largest)
        return TaskResult(rows=rows, summary=summary)
