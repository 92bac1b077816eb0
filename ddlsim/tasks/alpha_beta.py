"""`task=alpha_beta`: the closed-form all-reduce costs a paper publishes, evaluated on a grid.

SiPAC Table II gives the latency and bandwidth terms of the ring, mesh, hierarchical ring
(`h_ring`, groups of `k`) and SiPCO all-reduce for p CUs and n bytes, with a link latency alpha
and a time per byte beta (`ddlsim.network.collectives.sipco_logic.table2_terms`). One row per
(algorithm, p, n): latency_s, transfer_s (the bandwidth term) and time_s. SiPCO needs r^L = p:
L is the smallest number of levels from `levels` up whose radix r = p^(1/L) is an integer of
at most `max_radix` (SiPAC Fig. 7: L = 2, and L = 3 at 4,096 CUs). No fabric is priced: these
are the paper's formulas, as its Fig. 7 plots them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import TASKS
from ddlsim.report.table import quantity_table
from ddlsim.tasks.base import Components, TaskResult

FORMULAS = ("ring", "mesh", "h_ring", "sipco")


@dataclass
class AlphaBetaTaskConfig:
    """Grid of CUs x message sizes; every point is one row per algorithm."""

    name: str = "alpha_beta"
    algorithms: list[str] = field(default_factory=lambda: list(FORMULAS))
    num_ranks: list[int] = field(default_factory=lambda: [16, 64, 256, 1024, 4096])
    sizes: list[str] = field(default_factory=lambda: ["100MB"])
    alpha: str = "1us"
    link_bandwidth: str = "512Gbps"
    k: int = 8
    levels: int = 2
    max_radix: int = 32


def sipco_shape(p: int, levels: int, max_radix: int) -> tuple[int, int]:
    """(r, L): the fewest levels from `levels` up whose integer radix r = p^(1/L) is at most `max_radix`."""
    for level in range(levels, max(levels, p.bit_length()) + 1):
        radix = round(p ** (1 / level))
        if radix ** level == p and radix <= max_radix:
            return radix, level
    raise InfeasibleError(f"SiPCO needs r^L = p; {p} CUs have no radix <= {max_radix} with L >= {levels}")


@TASKS.register("alpha_beta", AlphaBetaTaskConfig)
@dataclass(frozen=True)
class AlphaBetaTask:
    """SiPAC Table II's all-reduce costs (alpha-beta closed forms) over CUs and message sizes."""

    reads: ClassVar[tuple[str, ...]] = ()

    algorithms: tuple[str, ...]
    num_ranks: tuple[int, ...]
    sizes_bytes: tuple[int, ...]
    alpha_s: float
    beta_s_per_byte: float
    k: int
    levels: int
    max_radix: int
    name: str = "alpha_beta"

    @classmethod
    def from_config(cls, config: AlphaBetaTaskConfig) -> AlphaBetaTask:
        unknown = [name for name in config.algorithms if name not in FORMULAS]
        if unknown or not config.algorithms:
            raise ConfigError("algorithms", list(config.algorithms), f"must list some of {', '.join(FORMULAS)}")
        if not config.num_ranks or any(p < 2 for p in config.num_ranks):
            raise ConfigError("num_ranks", list(config.num_ranks), "must list CU counts >= 2")
        for key in ("k", "levels", "max_radix"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        bandwidth = units.parse_bandwidth_bps(config.link_bandwidth, "link_bandwidth")
        return cls(tuple(config.algorithms), tuple(config.num_ranks),
                   tuple(units.parse_size_bytes(size, "sizes", allow_zero=False) for size in config.sizes),
                   units.parse_time_s(config.alpha, "alpha"), units.BITS_PER_BYTE / bandwidth,
                   config.k, config.levels, config.max_radix)

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network.collectives.sipco_logic import table2_terms

        rows = []
        for p in self.num_ranks:
            radix, levels = sipco_shape(p, self.levels, self.max_radix) if "sipco" in self.algorithms else (0, 0)
            for size in self.sizes_bytes:
                for algorithm in self.algorithms:
                    latency, transfer = table2_terms(algorithm, p, size, self.alpha_s, self.beta_s_per_byte,
                                                     r=radix, levels=levels, k=self.k)
                    rows.append({"algorithm": algorithm, "num_ranks": p, "size_bytes": size, "latency_s": latency,
                                 "transfer_s": transfer, "time_s": latency + transfer,
                                 "sipco_radix": radix, "sipco_levels": levels})
        summary = quantity_table(rows, {"algorithm": None, "num_ranks": None, "size_bytes": "size_bytes",
                                        "time_s": "time_s"},
                                 {"num_ranks": "CUs", "size_bytes": "size", "time_s": "JCT"})
        return TaskResult(rows=rows, summary=summary)
