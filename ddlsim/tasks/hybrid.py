"""`task=hybrid`: SiPAC's hybrid-parallel communication pattern (SiPAC VI-A, Fig. 13).

p CUs form d data-parallel groups of m = p / d model-parallel CUs. Each iteration every MP
group runs an all-to-all of `size` bytes (m consecutive ranks), then the d DP groups all-reduce
`size` bytes (d ranks m apart). The job completion time is the sum; compute is not modelled, as
in the paper. The sweep runs over per-CU bandwidth (SiPAC's accounting: the total bandwidth a
CU has to the network) and scales p:

- the per-CU bandwidth goes into the fabric's own parameter (`Fabric.node_bandwidth_key`): SiPAC
  and BCube ``cu_bandwidth``; the 2D torus ``node_bandwidth`` (four links of a quarter each); the
  SuperPod ``node_bandwidth`` (the NVLink bandwidth of a GPU, with the inter-node NICs fixed,
  as the paper fixes 8 x 200 Gb/s per server);
- with `fit_fabric`, the fabric is sized to p (`Fabric.sized_config`): SiPAC and BCube get
  L = log_r p levels, the torus near-square dimensions (8 x 8, 16 x 32), as the paper does;
  others keep their size.

`algorithms` maps a fabric kind to its [MP all-to-all, DP all-reduce] algorithms; a kind it does
not name is priced by the `collective` group's choice (e.g. ``best``) for both. The SiPAC
paper's pairing (mesh all-to-all and ring all-reduce on SuperPod and BCube, ring for both on the
torus, SiPCO for both on SiPAC) is set in configs/experiment/sipac_fig13.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from omegaconf import OmegaConf

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS, TASKS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.report.table import quantity_table
from ddlsim.tasks.base import Components, TaskResult, config_label
from ddlsim.training.run import reduction_model


@dataclass
class HybridTaskConfig:
    """Sizes and scales of the hybrid-parallel pattern; see the module docstring."""

    name: str = "hybrid"
    size: str = "100MB"
    num_ranks: list[int] = field(default_factory=lambda: [64, 512])
    dp_groups: int = 8
    cu_bandwidths: list[str] = field(default_factory=lambda: [f"{2**k}Gbps" for k in range(7, 13)])
    fit_fabric: bool = True
    algorithms: dict[str, list[str]] = field(default_factory=dict)  # kind -> [all-to-all, all-reduce]


@TASKS.register("hybrid", HybridTaskConfig)
@dataclass(frozen=True)
class HybridTask:
    """Hybrid-parallel communication (MP all-to-all + DP all-reduce) vs per-CU bandwidth (SiPAC Fig. 13)."""

    reads: ClassVar[tuple[str, ...]] = ("fabric", "collective", "device")

    size_bytes: int
    num_ranks: tuple[int, ...]
    dp_groups: int
    cu_bandwidths: tuple[str, ...]
    fit_fabric: bool
    algorithms: tuple[tuple[str, tuple[str, str]], ...]  # (fabric kind, (all-to-all, all-reduce))
    name: str = "hybrid"

    @classmethod
    def from_config(cls, config: HybridTaskConfig) -> HybridTask:
        if config.dp_groups < 1:
            raise ConfigError("dp_groups", config.dp_groups, "must be >= 1")
        for ranks in config.num_ranks:
            if ranks < 2 or ranks % config.dp_groups:
                raise ConfigError("num_ranks", ranks, f"must be >= 2 and a multiple of dp_groups = {config.dp_groups}")
        if not config.cu_bandwidths:
            raise ConfigError("cu_bandwidths", list(config.cu_bandwidths), "must list at least one bandwidth")
        for value in config.cu_bandwidths:
            units.parse_bandwidth_bps(value, "cu_bandwidths")
        pairs = []
        for kind, names in sorted(dict(config.algorithms or {}).items()):
            if len(names) != 2:
                raise ConfigError(f"algorithms.{kind}", list(names),
                                  "must be [all-to-all algorithm, all-reduce algorithm]")
            pairs.append((str(kind), (str(names[0]), str(names[1]))))
        return cls(units.parse_size_bytes(config.size, "size", allow_zero=False), tuple(config.num_ranks),
                   config.dp_groups, tuple(config.cu_bandwidths), config.fit_fabric, tuple(pairs))

    def _algorithms(self, kind: str, components: Components) -> tuple[Any, Any]:
        chosen = dict(self.algorithms).get(kind)
        return chosen if chosen is not None else (components.algorithm, components.algorithm)

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network import CollectiveEstimator

        node = OmegaConf.to_container(components.config.fabric, resolve=True)
        assert isinstance(node, dict)
        kind = str(node["name"])
        fabric_class = FABRICS.entry(kind).factory
        bandwidth_key = fabric_class.node_bandwidth_key()
        if bandwidth_key is None:
            with_key = [entry.name for entry in FABRICS if entry.factory.node_bandwidth_key() is not None]
            raise ConfigError("fabric.name", kind, f"has no per-CU bandwidth parameter known to task=hybrid; "
                                                   f"choose one of {', '.join(with_key)}")
        label = config_label(components.config, "fabric")
        mp_algorithm, dp_algorithm = self._algorithms(kind, components)
        reduction = reduction_model(components.device)
        rows = []
        for num_ranks in self.num_ranks:
            mp = num_ranks // self.dp_groups
            base = fabric_class.sized_config(node, num_ranks) if self.fit_fabric else node
            for bandwidth in self.cu_bandwidths:
                fabric = FABRICS.build({**base, bandwidth_key: bandwidth}, key="fabric")
                all_to_all = CollectiveEstimator(fabric, mp_algorithm, reduction).estimate(
                    CollectiveOp.ALL_TO_ALL, self.size_bytes, layout=GroupLayout(mp, 1, num_ranks))
                all_reduce = CollectiveEstimator(fabric, dp_algorithm, reduction).estimate(
                    CollectiveOp.ALL_REDUCE, self.size_bytes, layout=GroupLayout(self.dp_groups, mp, num_ranks))
                rows.append({
                    "fabric": label, "num_ranks": num_ranks, "mp_group": mp, "dp_group": self.dp_groups,
                    "cu_bandwidth_bps": units.parse_bandwidth_bps(bandwidth, "cu_bandwidths"),
                    "size_bytes": self.size_bytes, "time_s": all_to_all.time_s + all_reduce.time_s,
                    "all_to_all_algorithm": all_to_all.algorithm, "all_to_all_time_s": all_to_all.time_s,
                    "all_reduce_algorithm": all_reduce.algorithm, "all_reduce_time_s": all_reduce.time_s,
                    "latency_s": all_to_all.latency_s + all_reduce.latency_s,
                    "transfer_s": all_to_all.transfer_s + all_reduce.transfer_s,
                    "compute_s": all_to_all.compute_s + all_reduce.compute_s,
                })
        table = quantity_table(rows, {"fabric": None, "num_ranks": None, "cu_bandwidth_bps": "bandwidth_bps",
                                      "all_to_all_time_s": "time_s", "all_reduce_time_s": "time_s", "time_s": "time_s"},
                               {"num_ranks": "CUs", "cu_bandwidth_bps": "per-CU bandwidth",
                              "all_to_all_time_s": "MP all-to-all", "all_reduce_time_s": "DP all-reduce",
                              "time_s": "JCT"})
        return TaskResult(rows=rows, summary=table)
