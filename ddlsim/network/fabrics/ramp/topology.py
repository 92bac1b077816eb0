"""RAMP's physical structure (RAMP Section 3.1, Table 2): coordinates, counts and capacities.

A RAMP network has `x` communication groups of `racks` (J <= x) racks, each rack holding
`wavelengths` (Lambda) nodes, one per wavelength channel. Every node carries x transceiver
groups of `b` transceivers at `line_rate_bps` (B) each; transceiver t of any node reaches
receiver t of every node through the subnet (source group, destination group, t), so there
are b x^3 subnets. Node ids are group-major: ``node = (g * J + j) * Lambda + lam``.

`table2_as_printed` evaluates Table 2's formulas exactly as the paper prints them;
`RampDims` computes the same quantities from first principles. Where they differ (total
capacity and bisection carry an extra factor x in print) the docs (docs/ramp.md) explain why
the first-principles figures are the ones that match the paper's own prose (0.84 Ebps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError


def _positive_int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(key, value, "must be an integer >= 1")
    return int(value)


@dataclass(frozen=True)
class RampDims:
    """RAMP dimensions: x groups, J racks per group, Lambda nodes per rack, b transceivers per group."""

    x: int
    racks: int
    wavelengths: int
    b: int = 1
    line_rate_bps: float = 400e9

    def __post_init__(self) -> None:
        for key in ("x", "racks", "wavelengths", "b"):
            object.__setattr__(self, key, _positive_int(getattr(self, key), key))
        if self.racks > self.x:
            raise ConfigError("racks", self.racks, f"must be <= x = {self.x} (RAMP 3.1: at most x racks per group)")
        if not (np.isfinite(self.line_rate_bps) and self.line_rate_bps > 0):
            raise ConfigError("line_rate", self.line_rate_bps, "must be a positive bandwidth")

    # -- counts ------------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        """Lambda * J * x nodes (Lambda x^2 when J = x)."""
        return self.wavelengths * self.racks * self.x

    @property
    def transceivers_per_node(self) -> int:
        return self.b * self.x

    @property
    def num_transceivers(self) -> int:
        """b x^2 J Lambda: every transceiver of every node (RAMP 4.3: the active paths)."""
        return self.num_nodes * self.transceivers_per_node

    @property
    def num_subnets(self) -> int:
        """b x^3: one subnet per (source group, destination group, transceiver)."""
        return self.b * self.x ** 3

    @property
    def num_fibres(self) -> int:
        """2 b J x^3."""
        return 2 * self.b * self.racks * self.x ** 3

    @property
    def num_physical_links(self) -> int:
        """2 J x^2 (fibres ribboned by rack and source-destination group pair)."""
        return 2 * self.racks * self.x ** 2

    @property
    def device_groups_per_rack(self) -> int:
        """Lambda / x device groups of x nodes (RAMP 6.1.1); needs x | Lambda."""
        if self.wavelengths % self.x:
            raise ConfigError("wavelengths", self.wavelengths, f"must be a multiple of x = {self.x} for device groups")
        return self.wavelengths // self.x

    # -- capacities --------------------------------------------------------------------------
    @property
    def node_capacity_bps(self) -> float:
        """b B x: every transceiver of one node (12.8 Tbps at x = 32, B = 400 Gbps)."""
        return self.b * self.line_rate_bps * self.x

    @property
    def total_capacity_bps(self) -> float:
        """Node count x node capacity (0.84 Ebps at 65,536 nodes of 12.8 Tbps)."""
        return self.num_nodes * self.node_capacity_bps

    @property
    def bisection_bandwidth_bps(self) -> float:
        """Half the nodes sending at full capacity to the other half (RAMP is non-blocking)."""
        return self.total_capacity_bps / 2

    # -- coordinates -------------------------------------------------------------------------
    def coords(self, nodes: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(group g, rack j, node number lam) of node ids."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self.num_nodes):
            raise ConfigError("node", int(nodes.max()), f"must be in [0, {self.num_nodes})")
        wavelengths, racks = self.wavelengths, self.racks
        if wavelengths & (wavelengths - 1) == 0 and racks & (racks - 1) == 0:  # powers of two: shifts and masks
            low_bits = wavelengths.bit_length() - 1
            rest = nodes >> low_bits
            return rest >> (racks.bit_length() - 1), rest & (racks - 1), nodes & (wavelengths - 1)
        rest, lam = np.divmod(nodes, wavelengths)
        g, j = np.divmod(rest, racks)
        return g, j, lam

    def node_id(self, g: np.ndarray | int, j: np.ndarray | int, lam: np.ndarray | int) -> np.ndarray:
        g, j, lam = (np.asarray(v, dtype=np.int64) for v in (g, j, lam))
        return (g * self.racks + j) * self.wavelengths + lam

    def all_coords(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.coords(np.arange(self.num_nodes, dtype=np.int64))


def table2_as_printed(dims: RampDims) -> dict[str, float]:
    """RAMP Table 2 / Section 3.1 formulas, evaluated literally (B in bits per second)."""
    x, J, lam, b, B = dims.x, dims.racks, dims.wavelengths, dims.b, dims.line_rate_bps
    return {
        "num_nodes": lam * x ** 2,
        "total_capacity_bps": b * B * lam * x ** 2,
        "bisection_bandwidth": lam * J * x ** 3 / 2,
        "num_fibres": 2 * b * J * x ** 3,
        "num_physical_links": 2 * J * x ** 2,
        "num_subnets": b * x ** 3,
    }


def table2_figures(dims: RampDims) -> dict[str, float]:
    """The derived figures this fabric reports (first principles; see the module docstring)."""
    return {
        "num_nodes": dims.num_nodes,
        "node_capacity_bps": dims.node_capacity_bps,
        "total_capacity_bps": dims.total_capacity_bps,
        "bisection_bandwidth_bps": dims.bisection_bandwidth_bps,
        "num_fibres": dims.num_fibres,
        "num_physical_links": dims.num_physical_links,
        "num_subnets": dims.num_subnets,
        "num_transceivers": dims.num_transceivers,
    }
