"""The packet models' networks at the paper's scales, built from the fabrics' own constants.

OPSquare's constants live in `ddlsim.network.fabrics.opsquare.params`; the leaf-spine's link
rates, pod size and switch latency are those of the analytical H100 leaf-spine fabric, and only
the switch buffers (16 MB per leaf, 64 MB per spine, the paper's Section 2) belong to the packet
model.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim import units
from ddlsim.network.fabrics.opsquare.params import OpsquareParams
from ddlsim.network.packet.leafspine_model import LeafSpinePacketParams


@dataclass(frozen=True)
class LeafSpineReference:
    """The H100 leaf-spine of the OPSquare paper: user-facing values with units."""

    gpus_per_pod: int = 8
    num_planes: int = 4
    gpu_link_bandwidth: str = "900Gbps"
    uplink_bandwidth: str = "800Gbps"
    switch_latency: str = "1us"
    leaf_buffer: str = "16MB"
    spine_buffer: str = "64MB"
    propagation: str = "0ns"
    buffer_policy: str = "shared"
    dynamic_alpha: float = 1.0

    def params(self, num_nodes: int) -> LeafSpinePacketParams:
        return LeafSpinePacketParams(
            num_nodes=num_nodes, gpus_per_pod=self.gpus_per_pod, num_planes=self.num_planes,
            gpu_link_bps=units.parse_bandwidth_bps(self.gpu_link_bandwidth, "gpu_link_bandwidth"),
            uplink_bps=units.parse_bandwidth_bps(self.uplink_bandwidth, "uplink_bandwidth"),
            switch_latency_s=units.parse_time_s(self.switch_latency, "switch_latency"),
            leaf_buffer_bytes=units.parse_size_bytes(self.leaf_buffer, "leaf_buffer"),
            spine_buffer_bytes=units.parse_size_bytes(self.spine_buffer, "spine_buffer"),
            propagation_s=units.parse_time_s(self.propagation, "propagation"),
            buffer_policy=self.buffer_policy, dynamic_alpha=self.dynamic_alpha,
        )


def opsquare_params(num_nodes: int) -> OpsquareParams:
    return OpsquareParams.at_scale(num_nodes)


def leafspine_params(num_nodes: int, buffer_policy: str = "shared") -> LeafSpinePacketParams:
    return LeafSpineReference(buffer_policy=buffer_policy).params(num_nodes)
