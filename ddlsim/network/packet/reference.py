"""The packet models' networks at the paper's scales, built from the fabrics' own constants.

OPSquare's constants live in `ddlsim.network.fabrics.opsquare.params`. The leaf-spine's pod
size, bandwidths and switch latencies are those of the analytical H100 leaf-spine fabric
(`fabric=leaf_spine`, `LeafSpineConfig`): a GPU's 3.6 Tb/s of NVLink and its 400 Gb/s share of
the pod's uplinks are split over the 4 planes of the paper (four NVLink switches per pod, one
800G uplink each, to four spines: 900 Gb/s and 800 Gb/s per plane). Only the plane count and the
switch buffers (16 MB per leaf, 64 MB per spine, the paper's Section 2) belong to the packet model.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.network.fabrics.fat_tree.fabric import LeafSpineConfig
from ddlsim.network.fabrics.opsquare.params import OpsquareParams
from ddlsim.network.packet.leafspine_model import LeafSpinePacketParams

_ANALYTICAL = LeafSpineConfig()


@dataclass(frozen=True)
class LeafSpineReference:
    """The H100 leaf-spine of the OPSquare paper: user-facing values with units."""

    gpus_per_pod: int = _ANALYTICAL.gpus_per_node
    num_planes: int = 4
    gpu_bandwidth: str = _ANALYTICAL.node_bandwidth
    uplink_bandwidth_per_gpu: str = _ANALYTICAL.nic_bandwidth
    leaf_latency: str = _ANALYTICAL.node_switch_latency
    spine_latency: str = _ANALYTICAL.switch_latency
    leaf_buffer: str = "16MB"
    spine_buffer: str = "64MB"
    propagation: str = "0ns"
    buffer_policy: str = "shared"
    dynamic_alpha: float = 1.0

    def params(self, num_nodes: int) -> LeafSpinePacketParams:
        planes = self.num_planes
        gpu_bps = units.parse_bandwidth_bps(self.gpu_bandwidth, "gpu_bandwidth")
        uplink_bps = units.parse_bandwidth_bps(self.uplink_bandwidth_per_gpu, "uplink_bandwidth_per_gpu")
        return LeafSpinePacketParams(
            num_nodes=num_nodes, gpus_per_pod=self.gpus_per_pod, num_planes=planes,
            gpu_link_bps=gpu_bps / planes, uplink_bps=uplink_bps * self.gpus_per_pod / planes,
            leaf_latency_s=units.parse_time_s(self.leaf_latency, "leaf_latency"),
            spine_latency_s=units.parse_time_s(self.spine_latency, "spine_latency"),
            leaf_buffer_bytes=units.parse_size_bytes(self.leaf_buffer, "leaf_buffer"),
            spine_buffer_bytes=units.parse_size_bytes(self.spine_buffer, "spine_buffer"),
            propagation_s=units.parse_time_s(self.propagation, "propagation"),
            buffer_policy=self.buffer_policy, dynamic_alpha=self.dynamic_alpha,
        )


def opsquare_params(num_nodes: int) -> OpsquareParams:
    return OpsquareParams.at_scale(num_nodes)


def leafspine_params(num_nodes: int, buffer_policy: str = "shared") -> LeafSpinePacketParams:
    return LeafSpineReference(buffer_policy=buffer_policy).params(num_nodes)
