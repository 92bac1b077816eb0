"""Packet-level model of OPSquare for ML, on SimPy: the experiment of Rombouts and Calabretta.

Time advances in slots of one packet at the channel rate (1,500 B at 3.6 Tb/s: 3.33 ns). Each
node keeps one FIFO of at most `transmit_buffer` bytes per transmitter (P intra-pod, one
inter-pod). Every slot:

1. each node starts a packet with probability `load` and queues it on the transmitter of its
   first hop (dropped, and counted lost, when that buffer is full);
2. every transmitter offers its head-of-line packet to its optical switch; each switch output
   (a receiver) accepts one packet per slot, chosen uniformly at random among the contenders;
   the rejected packets stay at the head of their queue and are retransmitted from the buffer
   `retransmit_slots` later (1 = the next slot);
3. an accepted packet reaches the next node after serialisation (one slot), the optical
   preamble, the switch's label processing and the fibre; there it is delivered, or, on an
   inter-pod packet's relay node, queued on the relay's intra-pod transmitter after the
   transceiver forwarding latency (lost if that buffer is full).

The contention of all switches is resolved together with numpy inside the SimPy slot clock;
packets on their way to a relay are SimPy timeouts (see `engine.py`).
"""

from __future__ import annotations

import math

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.opsquare.params import OpsquareParams
from ddlsim.network.packet.engine import SlottedEngine
from ddlsim.network.packet.fifo import FifoBank
from ddlsim.network.packet.run_config import PacketRunConfig
from ddlsim.network.packet.stats import PacketRunResult, WindowStats
from ddlsim.network.packet.traffic import LocalityTraffic, MappedTraffic


def pick_one_per_key(keys: np.ndarray, num_keys: int, rng: np.random.Generator) -> np.ndarray:
    """Mask choosing, for every distinct key, exactly one of its elements uniformly at random."""
    priority = rng.permutation(keys.size)
    best = np.full(num_keys, -1, dtype=np.int64)
    np.maximum.at(best, keys, priority)
    return best[keys] == priority


class OpsquarePacketModel:
    """One run of the OPSquare packet model; `run()` returns the measured point."""

    network = "opsquare"

    def __init__(self, params: OpsquareParams, run: PacketRunConfig, *, retransmit_delay_s: float = 0.0,
                 traffic: MappedTraffic | None = None) -> None:
        """`traffic` replaces the run's locality traffic by a fixed pattern (its load is used)."""
        topo = params.topology
        self.params, self.run_config, self.topo = params, run, topo
        self.slot_s = run.packet_bits / params.channel_bps
        self.capacity_packets = params.buffer_bytes // run.packet_bytes
        if self.capacity_packets < 1:
            raise ConfigError("transmit_buffer", params.buffer_bytes,
                              f"must hold at least one {run.packet_bytes}-byte packet")
        if not (math.isfinite(retransmit_delay_s) and retransmit_delay_s >= 0):
            raise ConfigError("retransmit_delay_s", retransmit_delay_s, "must be finite and >= 0")
        self.hop_slots = 1.0 + params.hop_latency_s / self.slot_s
        self.forward_slots = params.forward_latency_s / self.slot_s
        self.retransmit_slots = 1 + math.ceil(retransmit_delay_s / self.slot_s - 1e-9)
        self.channels = topo.channels_per_node
        nodes = np.arange(topo.num_nodes)
        self.pod_of, self.index_of, self.group_of = topo.pod(nodes), topo.index(nodes), topo.group(nodes)
        if traffic is not None and traffic.destination.size != topo.num_nodes:
            raise ConfigError("traffic", traffic.destination.size, f"must map all {topo.num_nodes} nodes")
        self.traffic = traffic or LocalityTraffic(topo.num_nodes, topo.pod_size, run.load, run.locality)
        num_queues = topo.num_nodes * self.channels
        self.bank = FifoBank(num_queues, {"dst": np.int64, "birth": np.int64, "local": bool},
                             initial_capacity=8 * topo.num_nodes)
        self.retry_at = np.zeros(num_queues, dtype=np.int64)
        self.rng = np.random.default_rng(run.seed)
        start, total = run.slots(self.slot_s)
        self.stats = WindowStats(start, total)
        self.engine = SlottedEngine(total, self._step)
        self.totals = {"generated": 0, "delivered": 0, "lost": 0}

    def _intra_channel(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """`OpsquareTopology.intra_channel` on precomputed groups (the hot path)."""
        return (self.group_of[dst] - self.group_of[src]) % self.topo.num_groups

    # --- buffers -----------------------------------------------------------------------------------
    def _admit(self, slot: float, queues: np.ndarray, ids: np.ndarray) -> None:
        """Queue packets `ids` (already allocated) on `queues` (distinct), dropping on full buffers."""
        fits = self.bank.length[queues] < self.capacity_packets
        dropped = ids.size - int(fits.sum())
        if dropped:
            self.stats.on_lost(slot, self.bank.fields["local"][ids[~fits]])
            self.bank.release(ids[~fits])
            self.totals["lost"] += dropped
        self.bank.enqueue(queues[fits], ids[fits], distinct=True)

    def _generate(self, slot: int) -> None:
        src, dst = self.traffic.generate(self.rng)
        self.stats.on_generated(slot, src.size)
        self.totals["generated"] += src.size
        if not src.size:
            return
        local = self.pod_of[src] == self.pod_of[dst]
        channel = np.where(local, self._intra_channel(src, dst), self.topo.inter_channel)
        ids = self.bank.allocate(src.size, dst=dst, birth=slot, local=local)
        self._admit(slot, src * self.channels + channel, ids)

    def _relay_arrival(self, slot: int, payload: tuple[np.ndarray, np.ndarray]) -> None:
        ids, relay = payload
        dst = self.bank.fields["dst"][ids]
        queues = relay * self.channels + self._intra_channel(relay, dst)
        self._admit(slot, queues, ids)

    # --- optical switches ----------------------------------------------------------------------------
    def _transmit(self, slot: int) -> None:
        bank, topo = self.bank, self.topo
        active = np.flatnonzero((bank.length > 0) & (self.retry_at <= slot))
        if not active.size:
            return
        dst = bank.fields["dst"][bank.head[active]]
        node, channel = np.divmod(active, self.channels)
        inter = channel == topo.inter_channel
        relay = self.pod_of[dst] * topo.pod_size + self.index_of[node]
        next_node = np.where(inter, relay, dst)
        receiver = next_node * self.channels + channel
        won = pick_one_per_key(receiver, bank.num_queues, self.rng)
        self.retry_at[active[~won]] = slot + self.retransmit_slots
        sent = bank.pop(active[won])
        arrival = slot + self.hop_slots
        reached = next_node[won]
        done = reached == dst[won]
        if done.any():
            delivered = sent[done]
            self.stats.on_delivered(np.full(delivered.size, arrival), bank.fields["birth"][delivered],
                                    bank.fields["local"][delivered])
            self.totals["delivered"] += delivered.size
            bank.release(delivered)
        if not done.all():
            due = math.ceil(arrival + self.forward_slots - 1e-9)
            self.engine.after(due - slot, self._relay_arrival, (sent[~done], reached[~done]))

    def _step(self, slot: int) -> None:
        self._generate(slot)
        self._transmit(slot)

    def run(self) -> PacketRunResult:
        self.engine.run()
        return self.stats.result(network=self.network, num_nodes=self.topo.num_nodes,
                                 locality=self.run_config.locality, load=self.run_config.load, slot_s=self.slot_s)
