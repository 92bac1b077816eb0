"""SiPAC (SiPAC Section III): a BCube-like recursive topology of r-port multi-wavelength selective switches.

p = r^L compute units (CUs). Digit l of a CU (``(cu // r**l) % r``) is its port on its level-l
switch; the r CUs that differ only in digit l share that switch, one per level and CU (each CU
has L optical ports). A wavelength-selective switch (WSS) splits a transmitter's w wavelengths
into r groups of w / r and drops group g from input i at output (g + i) mod r, so every pair of
CUs on one switch has its own w / r wavelengths: a dedicated bandwidth b = B / r with
B = w u, without arbitration. Group 0 returns to the sender, so a CU reaches its r - 1
neighbours at b each and its L (r - 1) direct neighbours in all; `cu_bandwidth` is the total over
the L ports (L B, SiPAC VI-A's per-CU normalisation).

CUs on no common switch talk through intermediate CUs (BCube's server-centric routing: one hop
per differing digit, corrected in a rotated level order that spreads flows over the ports). A
hop goes CU -> switch -> CU over two links: `link_latency` (1 us) twice. Shared resources are
the per-pair channels (cu, level, port) of capacity b; flows crossing a channel share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddlsim.core import units
from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.network.fabrics.base import DomainCut, Fabric
from ddlsim.network.int_arrays import floor_mod
from ddlsim.network.pricing import Routes

_CAPACITIES = PROCESS_CACHES.memo("network.sipac_capacities", maxsize=8)


def _uniform_capacity(size: int, bandwidth_bps: float) -> np.ndarray:
    """One read-only capacity array per fabric shape (a 65,536-CU SiPAC has 4 million ports)."""
    capacity = _CAPACITIES.get((size, bandwidth_bps))
    if capacity is None:
        capacity = np.full(size, bandwidth_bps)
        capacity.flags.writeable = False
        _CAPACITIES.put((size, bandwidth_bps), capacity)
    return capacity


def check_bcube(radix: int, levels: int) -> int:
    for key, value, low in (("r", radix, 2), ("levels", levels, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(key, value, f"must be an integer >= {low}")
    return int(radix) ** int(levels)


def bcube_sized_config(params: dict[str, Any], num_nodes: int) -> dict[str, Any]:
    """A BCube-like config resized to `num_nodes` = r^L nodes: L = log_r(num_nodes) levels."""
    radix = int(params.get("r", 8))
    levels = max(1, round(math.log(num_nodes, radix)))
    if radix ** levels != num_nodes:
        raise InfeasibleError(f"{num_nodes} nodes is not a power of the radix r = {radix}")
    return {**params, "levels": levels}


class BcubeCapabilities:
    """Capabilities of the BCube-like fabrics (SiPAC, electronic BCube): r^L CUs on r-port switches
    in L levels, sized by L and swept by per-CU bandwidth."""

    radix: int

    def switch_radix(self) -> int | None:
        return self.radix

    @classmethod
    def node_bandwidth_key(cls) -> str | None:
        return "cu_bandwidth"

    @classmethod
    def sized_config(cls, params: dict[str, Any], num_nodes: int) -> dict[str, Any]:
        return bcube_sized_config(params, num_nodes)


def bcube_bisection_bps(radix: int, levels: int, per_cu_bps: float) -> float | None:
    """The lower half of the CU ids is the lower half of the top digit (r even): every flow across
    leaves a CU of one half on its top-level port towards the other half, `per_cu_bps` per CU."""
    if radix % 2:
        return None
    return radix ** levels // 2 * per_cu_bps


def bcube_domain_cuts(radix: int, levels: int, per_level_bps: float) -> tuple[DomainCut, ...]:
    """The r^l CUs that share their digits above l leave their domain on levels l..L-1 only:
    `per_level_bps` per CU and level."""
    cuts = []
    for level in range(1, levels):
        size = radix ** level
        capacity = size * (levels - level) * per_level_bps
        cuts.append(DomainCut(size, capacity, capacity))
    return tuple(cuts)


def digits(cus: np.ndarray, radix: int, levels: int) -> np.ndarray:
    """Shape (..., L): digit l of every CU."""
    cus = np.asarray(cus, dtype=np.int64)
    return (cus[..., None] // radix ** np.arange(levels, dtype=np.int64)) % radix


def bcube_hops(src: np.ndarray, dst: np.ndarray, radix: int, levels: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Digit-correcting paths: per level l, the CU each flow leaves from at level l (-1 if the
    flow does not hop at l), and the number of hops of each flow.

    BCube offers L parallel paths that correct the digits in rotated orders; a flow starts its
    rotation at level (src + dst) mod L, which spreads a CU's flows over all its ports (a fixed
    order would send every flow of a root through its level-0 port first)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    start = floor_mod(src + dst, levels)
    current = src.copy()
    # Every flow visits every level once (one offset each), so each row is written once per flow.
    leaving = np.full((levels, src.size), -1, dtype=np.int64)
    flows = np.arange(src.size)
    hops = np.zeros(src.size, dtype=np.int64)
    radix = int(radix)
    bits = radix.bit_length() - 1 if radix & (radix - 1) == 0 else None  # digits by shifts and masks
    for offset in range(levels):
        level = floor_mod(start + offset, levels)
        if bits is not None:
            shift = level * bits
            here, there = (current >> shift) & (radix - 1), (dst >> shift) & (radix - 1)
            weight = np.left_shift(1, shift)
        else:
            weight = radix ** level
            here, there = floor_mod(current // weight, radix), floor_mod(dst // weight, radix)
        moves = here != there
        leaving[level, flows] = np.where(moves, current, -1)
        current = current + (there - here) * weight
        hops += moves
    leaving = list(leaving)
    return leaving, hops


@dataclass
class SipacConfig:
    """SiPAC: r-port WSSes in L levels, r^L CUs; defaults are SiPAC VI-B's 512 CUs at 2,048 Gb/s."""

    name: str = "sipac"
    r: int = 8
    levels: int = 3
    cu_bandwidth: str = "2048Gbps"
    wavelengths: int = 64
    link_latency: str = "1us"
    io_latency: str = "0ns"
    pair_share: str = "r"


# How a port's B is shared among the CUs on its WSS: "r" gives each of the r wavelength groups
# (one returns to the sender, SiPAC III-B) B / r; "r_minus_1" gives each of the r - 1 neighbours
# B / (r - 1), as SiPAC's Table II bandwidth term (r - 1) n beta / (L r) per step implies for a
# port of B and as the SiPAC authors' traffic generator does.
PAIR_SHARES = ("r", "r_minus_1")


@FABRICS.register("sipac", SipacConfig, summary="SiPAC: BCube of r-port wavelength-selective switches (r^L CUs)")
@dataclass(frozen=True)
class Sipac(BcubeCapabilities, Fabric):
    """SiPAC: every CU pair on a WSS has dedicated wavelengths (B / r); multi-hop otherwise."""

    radix: int
    levels: int
    link_bandwidth_bps: float  # B = w u, one CU port
    wavelengths: int
    link_latency_s: float
    io_latency_s: float = 0.0
    name: str = "sipac"
    pair_share: str = "r"

    @classmethod
    def from_config(cls, config: SipacConfig) -> Sipac:
        check_bcube(config.r, config.levels)
        if config.pair_share not in PAIR_SHARES:
            raise ConfigError("pair_share", config.pair_share, f"must be one of {', '.join(PAIR_SHARES)}")
        if config.wavelengths < config.r or config.wavelengths % config.r:
            raise ConfigError("wavelengths", config.wavelengths,
                              f"must be a positive multiple of r = {config.r} (w / r wavelengths per CU pair)")
        total = units.parse_bandwidth_bps(config.cu_bandwidth, "cu_bandwidth")
        return cls(config.r, config.levels, total / config.levels, config.wavelengths,
                   units.parse_time_s(config.link_latency, "link_latency"),
                   units.parse_time_s(config.io_latency, "io_latency"), config.name, config.pair_share)

    @property
    def num_nodes(self) -> int:  # type: ignore[override]
        return self.radix ** self.levels

    @property
    def pair_bandwidth_bps(self) -> float:
        """b = B / r = w u / r: the dedicated bandwidth of one CU pair on one WSS (B / (r - 1)
        with pair_share = r_minus_1)."""
        return self.link_bandwidth_bps / (self.radix - 1 if self.pair_share == "r_minus_1" else self.radix)

    @property
    def wavelength_rate_bps(self) -> float:
        """u = B / w."""
        return self.link_bandwidth_bps / self.wavelengths

    @property
    def hop_latency_s(self) -> float:
        """CU -> WSS -> CU: the link latency doubled through the optical switch."""
        return 2 * self.link_latency_s

    def domain_sizes(self) -> tuple[int, ...]:
        return tuple(self.radix ** (level + 1) for level in range(self.levels))

    def supports_multicast(self) -> bool:
        return False  # the WSS broadcast reaches each neighbour on its own wavelengths: no saving

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.hop_latency_s + self.io_latency_s, 8.0 / self.pair_bandwidth_bps

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """L ports, each reaching its r - 1 neighbours at b (the group back to the sender is idle)."""
        return self.levels * (self.radix - 1) * self.pair_bandwidth_bps

    def bisection_bps(self) -> float | None:
        return bcube_bisection_bps(self.radix, self.levels, self.radix // 2 * self.pair_bandwidth_bps)

    def min_latency_s(self) -> float:
        return self.io_latency_s + self.hop_latency_s

    def domain_cuts(self) -> tuple[DomainCut, ...]:
        return bcube_domain_cuts(self.radix, self.levels, (self.radix - 1) * self.pair_bandwidth_bps)

    def describe(self) -> dict[str, object]:
        return {"fabric": self.name, "fabric_nodes": self.num_nodes, "sipac_r": self.radix,
                "sipac_levels": self.levels, "pair_bandwidth_bps": self.pair_bandwidth_bps}

    def capacity_bps(self) -> np.ndarray:
        return _uniform_capacity(self.num_nodes * self.levels * self.radix, self.pair_bandwidth_bps)

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        leaving, hops = bcube_hops(src_nodes, dst_nodes, self.radix, self.levels)
        slots = []
        for level, cu in enumerate(leaving):
            port = floor_mod(np.asarray(dst_nodes, dtype=np.int64) // self.radix ** level, self.radix)
            slots.append(np.where(cu >= 0, (cu * self.levels + level) * self.radix + port, -1))
        return Routes(self.io_latency_s + hops * self.hop_latency_s, tuple(slots), egress=())
