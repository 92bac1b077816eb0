"""What a packet run measures, counted only inside the measurement window.

The window is [warm-up, warm-up + measurement). A packet counts as generated, lost or delivered
when that event happens inside the window (Rombouts and Calabretta: sent and received packets
per node and the end-to-end latency of every received packet, after a warm-up that fills the
buffers). Throughput is delivered bits per node and second as a fraction of the node's
injection bandwidth; loss ratio is packets lost over packets generated in the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PacketRunResult:
    """One point of a load sweep. Times in seconds; rates as fractions of node bandwidth."""

    network: str
    num_nodes: int
    locality: float
    load: float
    throughput: float
    loss_ratio: float
    latency_mean_s: float
    latency_p99_s: float
    latency_max_s: float
    latency_local_mean_s: float
    latency_remote_mean_s: float
    latency_local_max_s: float
    latency_remote_max_s: float
    packets_generated: int
    packets_delivered: int
    packets_lost: int
    packets_lost_local: int
    packets_delivered_local: int
    packets_delivered_remote: int

    def as_row(self) -> dict[str, object]:
        return dict(self.__dict__)


class WindowStats:
    def __init__(self, start_slot: float, end_slot: float) -> None:
        self.start_slot = float(start_slot)
        self.end_slot = float(end_slot)
        self.generated = 0
        self.lost = 0
        self.lost_local = 0
        self._latency_chunks: list[np.ndarray] = []
        self._local_chunks: list[np.ndarray] = []

    def _inside(self, times: np.ndarray) -> np.ndarray:
        return (times >= self.start_slot) & (times < self.end_slot)

    def on_generated(self, slot: int, count: int) -> None:
        if self.start_slot <= slot < self.end_slot:
            self.generated += int(count)

    def on_lost(self, slot: float, local: np.ndarray) -> None:
        """Packets dropped at `slot`; `local` flags the intra-pod ones."""
        if self.start_slot <= slot < self.end_slot:
            self.lost += int(local.size)
            self.lost_local += int(np.count_nonzero(local))

    def on_delivered(self, times: np.ndarray, births: np.ndarray, local: np.ndarray) -> None:
        inside = self._inside(times)
        if inside.any():
            self._latency_chunks.append((times[inside] - births[inside]).astype(np.float64))
            self._local_chunks.append(local[inside].astype(bool))

    def latencies(self, slot_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(latency in seconds, intra-pod mask) of every packet delivered in the window."""
        latency = np.concatenate(self._latency_chunks) * slot_s if self._latency_chunks else np.zeros(0)
        local = np.concatenate(self._local_chunks) if self._local_chunks else np.zeros(0, dtype=bool)
        return latency, local

    def result(self, *, network: str, num_nodes: int, locality: float, load: float, slot_s: float,
               packet_slots_per_node: float = 1.0) -> PacketRunResult:
        """Summarise; `packet_slots_per_node` is slots per packet at the node's full bandwidth."""
        latency, local = self.latencies(slot_s)
        window_slots = self.end_slot - self.start_slot
        capacity_packets = num_nodes * window_slots / packet_slots_per_node

        def mean(values: np.ndarray) -> float:
            return float(values.mean()) if values.size else math.nan

        def maximum(values: np.ndarray) -> float:
            return float(values.max()) if values.size else math.nan

        return PacketRunResult(
            network=network, num_nodes=num_nodes, locality=locality, load=load,
            throughput=latency.size / capacity_packets,
            loss_ratio=self.lost / self.generated if self.generated else 0.0,
            latency_mean_s=mean(latency),
            latency_p99_s=float(np.quantile(latency, 0.99)) if latency.size else math.nan,
            latency_max_s=maximum(latency),
            latency_local_mean_s=mean(latency[local]),
            latency_remote_mean_s=mean(latency[~local]),
            latency_local_max_s=maximum(latency[local]),
            latency_remote_max_s=maximum(latency[~local]),
            packets_generated=self.generated, packets_delivered=int(latency.size), packets_lost=self.lost,
            packets_lost_local=self.lost_local,
            packets_delivered_local=int(local.sum()), packets_delivered_remote=int((~local).sum()),
        )
