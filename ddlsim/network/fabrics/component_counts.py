"""Component counts of the topologies of SiPAC Fig. 9: links, transceivers, switches, lasers and
wavelength lanes as a function of network size.

SiPAC (Wu et al., seeds/sipac.txt) states its own structure in Section III and the baselines'
in Section VI-A; what each count follows:

- **SiPAC(r, L)** (III-A): p = r^L CUs; "a general SiPAC_l ... is constructed from r^l r-port
  switches connecting r SiPAC_(l-1)s", so each of the L levels has r^(L-1) WSSes of radix r
  (L r^(L-1) switches); every CU has "L embedded optical transceivers", one fibre link per level
  (L p links). The WSS switches transparently (III-B), so links end in a transceiver only at the
  CU: L p transceivers. Each transmitter takes w comb lines from one comb source ("a single
  component", VI-A.2), so L p lasers and L p w wavelength lanes; an r x r WSS drops w / r lines
  to each output with one micro-ring per (input, output) pair (Fig. 4): r^2 rings per WSS.
- **BCube(r, L)** (VI-A, [55]): the same wiring with electronic packet switches, which terminate
  every link optically at both ends: 2 L p transceivers.
- **nD torus** (VI-A: the 2D torus of TPU v3 pods): n links per CU (each of its 2n neighbour
  links shared by two CUs), two transceivers per link, no switches.
- **Three-level fat tree** (VI-A.2, k-ary, Al-Fares et al. 2008): k^3 / 4 hosts, 5 k^2 / 4
  switches of radix k, 3 k^3 / 4 links (host-edge, edge-aggregation, aggregation-core).
- **Canonical Dragonfly** (VI-A.2, Kim et al. 2008, "one inter-group link per EPS"): h = 1 global
  link per router, a = 2 t routers per group for t terminals per router, g = a h + 1 groups,
  N = a t g; links: N terminal + g a (a - 1) / 2 local + g a h / 2 global.
- **SuperPod** (VI-A: DGX-A100 nodes of 8 GPUs with 6 NVSwitches, a two-level leaf-spine of
  200 Gb/s InfiniBand, one HCA per GPU): 12 NVLinks per A100 (A100 datasheet) inside the node,
  no transceivers; per GPU one host-leaf and one leaf-spine InfiniBand link; leaf and spine
  switches of 40 ports (Quantum QM8790), half of a leaf's ports down.

Every electronic-switched or point-to-point link is counted as optical with a transceiver at
each end and one single-wavelength laser per transceiver (the "arrays of single-wavelength
lasers" SiPAC II contrasts with comb sources); NVLink is electrical. Sizes follow the target
network size to the nearest shape each family can build; rows carry the size built.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ddlsim.core.errors import ConfigError

TOPOLOGIES = ("sipac", "bcube", "torus", "fat_tree", "dragonfly", "superpod")
NVLINKS_PER_A100 = 12  # NVIDIA A100 datasheet: 12 third-generation NVLinks per GPU
NVSWITCHES_PER_DGX = 6  # NVIDIA DGX A100 user guide: six NVSwitches per system
GPUS_PER_DGX = 8
IB_SWITCH_PORTS = 40  # NVIDIA Quantum QM8790 HDR switch


@dataclass(frozen=True)
class ComponentCount:
    """What one topology of `num_ranks` CUs is built from."""

    topology: str
    num_ranks: int
    switch_radix: int
    levels: int
    links: int
    transceivers: int
    switches: int
    lasers: int
    lanes: int
    rings: int = 0  # micro-rings in the WSSes (SiPAC only)

    def __post_init__(self) -> None:
        for key in ("num_ranks", "links", "transceivers", "switches", "lasers", "lanes", "rings"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 0:
                raise ConfigError(key, value, "must be an integer >= 0")

    def row(self) -> dict[str, object]:
        return asdict(self)


def _nearest_root(target: int, power: int, low: int = 2) -> int:
    return max(low, round(target ** (1.0 / power)))


def sipac_counts(radix: int, levels: int, wavelengths: int) -> ComponentCount:
    """SiPAC(r, L) with `wavelengths` comb lines per transmitter (III-A, III-B, Fig. 4)."""
    if wavelengths % radix:
        raise ConfigError("wavelengths", wavelengths, f"must be a multiple of the WSS radix r = {radix} (III-B)")
    cus = radix**levels
    switches = levels * radix ** (levels - 1)
    transceivers = levels * cus
    return ComponentCount("sipac", cus, radix, levels, links=levels * cus, transceivers=transceivers,
                          switches=switches, lasers=transceivers, lanes=transceivers * wavelengths,
                          rings=switches * radix**2)


def bcube_counts(radix: int, levels: int) -> ComponentCount:
    """BCube(r, L) of electronic switches: SiPAC's wiring, a transceiver at both ends of each link."""
    cus = radix**levels
    links = levels * cus
    return ComponentCount("bcube", cus, radix, levels, links=links, transceivers=2 * links,
                          switches=levels * radix ** (levels - 1), lasers=2 * links, lanes=2 * links)


def torus_counts(side: int, dims: int) -> ComponentCount:
    """A `dims`-dimensional torus of side `side` >= 3 (two distinct neighbours per dimension)."""
    if side < 3:
        raise ConfigError("side", side, "must be >= 3 so that a CU's two neighbours per dimension differ")
    cus = side**dims
    links = dims * cus
    return ComponentCount("torus", cus, 0, dims, links=links, transceivers=2 * links, switches=0,
                          lasers=2 * links, lanes=2 * links)


def fat_tree_counts(radix: int) -> ComponentCount:
    """The three-level k-ary fat tree (k even)."""
    if radix < 2 or radix % 2:
        raise ConfigError("switch_radix", radix, "a k-ary fat tree needs an even k >= 2")
    hosts = radix**3 // 4
    links = 3 * hosts
    return ComponentCount("fat_tree", hosts, radix, 3, links=links, transceivers=2 * links,
                          switches=5 * radix**2 // 4, lasers=2 * links, lanes=2 * links)


def dragonfly_counts(routers_per_group: int) -> ComponentCount:
    """The canonical Dragonfly with one global link per router (h = 1), a = 2t (a even)."""
    a = routers_per_group
    if a < 2 or a % 2:
        raise ConfigError("routers_per_group", a, "a balanced Dragonfly needs an even a = 2t >= 2")
    terminals, global_links = a // 2, 1
    groups = a * global_links + 1
    hosts = a * terminals * groups
    links = hosts + groups * a * (a - 1) // 2 + groups * a * global_links // 2
    return ComponentCount("dragonfly", hosts, terminals + a - 1 + global_links, 2, links=links,
                          transceivers=2 * links, switches=a * groups, lasers=2 * links, lanes=2 * links)


def superpod_counts(num_nodes: int) -> ComponentCount:
    """`num_nodes` DGX-A100 nodes on a two-level InfiniBand leaf-spine, one HCA per GPU."""
    if num_nodes < 1:
        raise ConfigError("num_nodes", num_nodes, "must be >= 1")
    gpus = GPUS_PER_DGX * num_nodes
    leaves = math.ceil(gpus / (IB_SWITCH_PORTS // 2))
    spines = math.ceil(leaves * (IB_SWITCH_PORTS // 2) / IB_SWITCH_PORTS)
    ib_links = 2 * gpus  # host-leaf and leaf-spine
    return ComponentCount("superpod", gpus, IB_SWITCH_PORTS, 2, links=NVLINKS_PER_A100 * gpus + ib_links,
                          transceivers=2 * ib_links, switches=NVSWITCHES_PER_DGX * num_nodes + leaves + spines,
                          lasers=2 * ib_links, lanes=2 * ib_links)


def counts_near(topology: str, target_ranks: int, levels: int = 2, lines_per_pair: int = 1) -> ComponentCount:
    """`topology` at the buildable size nearest to `target_ranks` CUs; `levels` is SiPAC's and
    BCube's L and the torus' dimensions; a SiPAC transmitter carries w = r x `lines_per_pair` comb
    lines (w / r per CU pair, III-B)."""
    if target_ranks < 2:
        raise ConfigError("num_ranks", target_ranks, "must be >= 2")
    if topology in ("sipac", "bcube"):
        radix = _nearest_root(target_ranks, levels)
        return sipac_counts(radix, levels, radix * lines_per_pair) if topology == "sipac" else \
            bcube_counts(radix, levels)
    if topology == "torus":
        return torus_counts(_nearest_root(target_ranks, levels, low=3), levels)
    if topology == "fat_tree":
        return fat_tree_counts(max(2, 2 * round((4 * target_ranks) ** (1 / 3) / 2)))
    if topology == "dragonfly":
        candidates = range(2, 2 * math.isqrt(target_ranks) + 4, 2)
        best = min(candidates, key=lambda a: abs(math.log(a * (a // 2) * (a + 1) / target_ranks)))
        return dragonfly_counts(best)
    if topology == "superpod":
        return superpod_counts(max(1, round(target_ranks / GPUS_PER_DGX)))
    raise ConfigError("topologies", topology, f"must be one of {', '.join(TOPOLOGIES)}")
