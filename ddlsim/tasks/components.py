"""`task=components`: links, transceivers, switches, lasers and wavelength lanes against network
size for the topologies of SiPAC Fig. 9 (`ddlsim.network.fabrics.component_counts`).

`topologies` lists entries ``family`` or ``family:levels`` (``sipac:2``, ``sipac:3``,
``bcube:3``, ``torus:2``, ``fat_tree``, ``dragonfly``, ``superpod``); each is built at the size
nearest to every target of `num_ranks` it can reach, and one row per (entry, size built) says
what it is made of, with the same counts per CU (``links_per_cu``, ...). `lines_per_pair` is
w / r, the comb lines each CU pair gets on a SiPAC WSS (III-B; 1 is the fewest that works).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import TASKS
from ddlsim.network.fabrics.component_counts import TOPOLOGIES, counts_near
from ddlsim.report.table import quantity_table
from ddlsim.tasks.base import Components, TaskResult

PER_CU = ("links", "transceivers", "switches", "lasers", "lanes")
DEFAULT_LEVELS = {"sipac": 2, "bcube": 2, "torus": 2, "fat_tree": 3, "dragonfly": 2, "superpod": 2}


@dataclass
class ComponentsTaskConfig:
    """Topology entries x target network sizes; see the module docstring."""

    name: str = "components"
    topologies: list[str] = field(default_factory=lambda: ["sipac:2", "sipac:3", "bcube:2", "bcube:3", "torus:2",
                                                           "torus:3", "fat_tree", "dragonfly", "superpod"])
    num_ranks: list[int] = field(default_factory=lambda: [64, 256, 1024, 4096, 16384, 65536])
    lines_per_pair: int = 1


def parse_entry(entry: str) -> tuple[str, int]:
    """``family[:levels]`` -> (family, levels), checked."""
    family, _, levels = str(entry).partition(":")
    if family not in TOPOLOGIES:
        raise ConfigError("topologies", entry, f"family must be one of {', '.join(TOPOLOGIES)}")
    if not levels:
        return family, DEFAULT_LEVELS[family]
    if family not in ("sipac", "bcube", "torus") or not levels.isdigit() or int(levels) < 1:
        raise ConfigError("topologies", entry, "only sipac, bcube and torus take ':<levels>', an integer >= 1")
    return family, int(levels)


@TASKS.register("components", ComponentsTaskConfig)
@dataclass(frozen=True)
class ComponentsTask:
    """Component counts (links, transceivers, switches, lasers, lanes) against network size (SiPAC Fig. 9)."""

    reads: ClassVar[tuple[str, ...]] = ()

    entries: tuple[tuple[str, int], ...]
    num_ranks: tuple[int, ...]
    lines_per_pair: int
    name: str = "components"

    @classmethod
    def from_config(cls, config: ComponentsTaskConfig) -> ComponentsTask:
        if not config.topologies:
            raise ConfigError("topologies", list(config.topologies), "must list at least one topology")
        if not config.num_ranks or min(config.num_ranks) < 2:
            raise ConfigError("num_ranks", list(config.num_ranks), "must list sizes >= 2")
        if config.lines_per_pair < 1:
            raise ConfigError("lines_per_pair", config.lines_per_pair, "must be >= 1")
        return cls(tuple(parse_entry(entry) for entry in config.topologies), tuple(config.num_ranks),
                   config.lines_per_pair)

    def run(self, components: Components) -> TaskResult:
        rows = []
        for family, levels in self.entries:
            label = family if family not in ("sipac", "bcube", "torus") else f"{family}_l{levels}"
            built = {}
            for target in self.num_ranks:
                count = counts_near(family, target, levels, self.lines_per_pair)
                built.setdefault(count.num_ranks, count)  # two targets may round to one size
            for count in built.values():
                row = {**count.row(), "topology": label, "family": family, "status": "ok"}
                row.update({f"{key}_per_cu": row[key] / count.num_ranks for key in PER_CU})
                rows.append(row)
        table = quantity_table(rows, {"topology": None, "num_ranks": None, "switch_radix": None, "links": None,
                                      "transceivers": None, "switches": None, "lasers": None, "lanes": None},
                               {"num_ranks": "CUs", "switch_radix": "radix"})
        return TaskResult(rows=rows, summary=table)
