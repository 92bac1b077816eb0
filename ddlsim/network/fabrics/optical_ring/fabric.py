"""The TeraRack-style WDM optical ring (WRHT Section 3.2 and Table 2) as a ddlsim fabric.

N nodes on a double ring: four fibre rings, two per direction, each carrying `wavelengths`
wavelengths of 40 Gbps. Every transfer of a step is a lightpath: routed the shorter way round,
given a (fibre, wavelength) channel by first fit (see `rwa.py`), and then sent alone on its
wavelength, so concurrent transfers never share bandwidth. A step whose lightpaths need more
channels than a direction offers cannot run (`InfeasibleError`).

Price of a step (Eq. 6 of WRHT, step by step):
- latency: MRR reconfiguration before the step (`setup_time_s`: before every step, as in the
  paper, or only when the circuits change) plus fibre propagation over the longest lightpath;
- transfer: the largest transfer's bits over one wavelength, plus O/E/O conversion per packet
  (497 fs per 72-byte packet, counted per byte).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.optical_ring import rwa
from ddlsim.network.fabrics.optical_ring.params import OpticalRingConfig, OpticalRingSpec
from ddlsim.network.patterns import Mesh, Pattern
from ddlsim.network.placement import Placement, job_ranks
from ddlsim.network.pricing import PatternCost


@FABRICS.register("optical_ring", OpticalRingConfig,
                  summary="TeraRack-style WDM double ring, 64 wavelengths x 40 Gbps, 25 us MRR reconfiguration (WRHT)")
@dataclass(frozen=True)
class OpticalRing(Fabric):
    """TeraRack-style WDM double optical ring with per-step RWA (WRHT Table 2)."""

    spec: OpticalRingSpec
    name: str = "optical_ring"

    @classmethod
    def from_config(cls, config: OpticalRingConfig) -> OpticalRing:
        return cls(OpticalRingSpec.from_config(config), config.name)

    # -- structure ------------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:  # type: ignore[override]
        return self.spec.num_nodes

    @property
    def wavelengths(self) -> int:
        return self.spec.wavelengths

    @property
    def channels_per_direction(self) -> int:
        return self.spec.channels_per_direction

    def nominal_alpha_beta(self) -> tuple[float, float]:
        return self.spec.reconfiguration_s, self._s_per_byte

    @property
    def _s_per_byte(self) -> float:
        spec = self.spec
        return BITS_PER_BYTE / spec.wavelength_bandwidth_bps + spec.oeo_per_packet_s / spec.packet_bytes

    # -- physical capacities ---------------------------------------------------------------------
    def node_egress_bps(self) -> float:
        """One lightpath per (fibre, wavelength) channel in each direction round the ring."""
        return 2 * self.channels_per_direction * self.spec.wavelength_bandwidth_bps

    def bisection_bps(self) -> float | None:
        """Two contiguous halves of the ring meet at two segments; each carries one direction's
        channels from one half to the other."""
        if self.num_nodes % 2:
            return None
        return 2 * self.channels_per_direction * self.spec.wavelength_bandwidth_bps

    def min_latency_s(self) -> float:
        """One hop of propagation, plus the MRR reconfiguration when every step pays it."""
        setup = self.spec.reconfiguration_s if self.spec.reconfigure_every_step else 0.0
        return setup + self.spec.hop_propagation_s

    def max_group_size(self, num_ranks: int) -> int:
        """m' of Eqs. 7 to 13 for a WRHT collective over `num_ranks` ranks."""
        return self.spec.budget.max_group_size(num_ranks)

    def group_size_ok(self, num_ranks: int, group_size: int) -> bool:
        """True when the optical budget admits WRHT group size m (always, if constraints are off)."""
        return not self.spec.optical_constraints or self.spec.budget.group_size_ok(num_ranks, group_size)

    def describe(self) -> dict[str, Any]:
        spec = self.spec
        return {"fabric": self.name, "fabric_nodes": spec.num_nodes, "wavelengths": spec.wavelengths,
                "fibres_per_direction": spec.fibres_per_direction,
                "wavelength_bandwidth_bps": spec.wavelength_bandwidth_bps,
                "reconfiguration_s": spec.reconfiguration_s}

    # -- pricing ----------------------------------------------------------------------------------
    def setup_time_s(self, previous_circuit: Hashable, circuit: Hashable) -> float:
        """MRR reconfiguration: before every step (the paper), or only when the circuits change."""
        if self.spec.reconfigure_every_step or previous_circuit != circuit:
            return self.spec.reconfiguration_s
        return 0.0

    def lightpaths(self, pattern: Pattern, layout: GroupLayout, placement: Placement
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src node, dst node, weight) of every transfer of `pattern` in every group of `layout`."""
        listed = pattern.pairs()
        src = placement.node_of(job_ranks(layout, listed.src).ravel())
        dst = placement.node_of(job_ranks(layout, listed.dst).ravel())
        return src, dst, np.tile(listed.weight, layout.num_groups)

    def assignment(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> rwa.Assignment:
        """First-fit RWA of the pattern's lightpaths (all groups at once)."""
        src, dst, _ = self.lightpaths(pattern, layout, placement)
        return rwa.assign(src, dst, self.num_nodes, limit=self.channels_per_direction)

    def fits(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> bool:
        """True when first fit finds channels for every lightpath of the pattern."""
        if isinstance(pattern, Mesh) and not self._mesh_may_fit(pattern):
            return False
        return self.assignment(pattern, layout, placement).channels <= self.channels_per_direction

    def _mesh_may_fit(self, mesh: Mesh) -> bool:
        # A member of a block of b hears b - 1 lightpaths over its two incoming segments.
        sizes = mesh.block_sizes()
        largest = int(sizes.max()) if sizes.size else 0
        return -(-(largest - 1) // 2) <= self.channels_per_direction

    def price(self, pattern: Pattern, layout: GroupLayout, placement: Placement) -> PatternCost:
        if isinstance(pattern, Mesh) and not self._mesh_may_fit(pattern):
            sizes = pattern.block_sizes()
            raise InfeasibleError(
                f"a direct exchange among {int(sizes.max())} ranks needs at least {-(-(int(sizes.max()) - 1) // 2)} "
                f"channels per direction at each receiver; {self.name} has {self.channels_per_direction} "
                f"({self.spec.fibres_per_direction} fibres x {self.wavelengths} wavelengths)")
        src, dst, weights = self.lightpaths(pattern, layout, placement)
        if weights.size == 0:
            return PatternCost.zero(pattern.num_classes)
        s_per_unit = float(weights.max()) * self._s_per_byte
        if pattern.num_classes:
            # Windows of classes run separately: each window is routed when it is priced.
            hops = rwa.route_shortest(src, dst, self.num_nodes)[1]
            return PatternCost(float(hops.max()) * self.spec.hop_propagation_s, s_per_unit)
        result = rwa.assign(src, dst, self.num_nodes, limit=self.channels_per_direction)
        if result.channels > self.channels_per_direction:
            raise InfeasibleError(
                f"a step of {result.num_lightpaths} lightpaths needs at least {result.channels} channels per "
                f"direction (clockwise {result.cw_channels}, counter-clockwise {result.ccw_channels}); "
                f"{self.name} has {self.channels_per_direction} ({self.spec.fibres_per_direction} fibres x "
                f"{self.wavelengths} wavelengths)")
        return PatternCost(result.max_hops * self.spec.hop_propagation_s, s_per_unit)
