"""Packet-level model of the H100 leaf-spine reference network of the OPSquare paper, on SimPy.

Pods of `gpus_per_pod` GPUs; each GPU has one link of `gpu_link_bps` to each of the pod's
`num_planes` parallel leaf (NVLink) switches; leaf switch k of every pod has one uplink of
`uplink_bps` to spine switch k. The planes are independent networks: a GPU stripes its packets
over them round-robin. A leaf (spine) switch puts a packet into the FIFO of its output port
`leaf_latency_s` (`spine_latency_s`) after it arrived: store and forward, no flow control. A
packet that finds no room in the switch's buffer is dropped; `buffer_policy` says how the buffer
is divided among output ports: "shared" (complete sharing: one port may fill all of it),
"dynamic" (the dynamic threshold of Choudhury and Hahne: a port may queue up to `dynamic_alpha`
times the free buffer) or "static" (an equal share per output port). Links serialise packets at
their rate; GPUs' own send queues are unbounded (the data waits in GPU memory).

The clock ticks once per packet time of one GPU link (1,500 B at 900 Gb/s: 13.3 ns), so no port
sends more than one packet per tick; GPUs still start packets per sub-slot of one packet at their
full injection bandwidth (Bernoulli with probability `load`, as in the OPSquare model). Queues are
served in continuous time: a port starts its next packet at max(link free, packet ready), so
800 Gb/s links keep their exact rate. The work for all ports is done per tick, in batch, inside
the SimPy clock, and packets between switches are SimPy timeouts (see `engine.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.network.packet.engine import SlottedEngine
from ddlsim.network.packet.fifo import FifoBank, occurrence_rank
from ddlsim.network.packet.run_config import PacketRunConfig
from ddlsim.network.packet.stats import PacketRunResult, WindowStats
from ddlsim.network.packet.traffic import LocalityTraffic

NIC, DOWN, UP, SPINE = 0, 1, 2, 3
"""Queue kinds: GPU send queue, leaf port to a GPU, leaf uplink, spine port to a leaf."""

BUFFER_POLICIES = ("shared", "dynamic", "static")


@dataclass(frozen=True)
class LeafSpinePacketParams:
    num_nodes: int
    gpus_per_pod: int
    num_planes: int
    gpu_link_bps: float
    uplink_bps: float
    leaf_latency_s: float
    spine_latency_s: float
    leaf_buffer_bytes: int
    spine_buffer_bytes: int
    propagation_s: float = 0.0
    buffer_policy: str = "shared"
    dynamic_alpha: float = 1.0

    def __post_init__(self) -> None:
        if self.buffer_policy not in BUFFER_POLICIES:
            raise ConfigError("buffer_policy", self.buffer_policy, f"must be one of {', '.join(BUFFER_POLICIES)}")
        if not self.dynamic_alpha > 0:
            raise ConfigError("dynamic_alpha", self.dynamic_alpha, "must be positive")
        for key in ("num_nodes", "gpus_per_pod", "num_planes"):
            if getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be >= 1")
        if self.num_nodes % self.gpus_per_pod:
            raise ConfigError("num_nodes", self.num_nodes, f"must be a multiple of gpus_per_pod = {self.gpus_per_pod}")
        for key in ("gpu_link_bps", "uplink_bps"):
            if not getattr(self, key) > 0:
                raise ConfigError(key, getattr(self, key), "must be positive")
        for key in ("leaf_latency_s", "spine_latency_s", "propagation_s", "leaf_buffer_bytes", "spine_buffer_bytes"):
            if not getattr(self, key) >= 0:
                raise ConfigError(key, getattr(self, key), "must be zero or positive")

    @property
    def num_pods(self) -> int:
        return self.num_nodes // self.gpus_per_pod

    @property
    def injection_bps(self) -> float:
        """A GPU's bandwidth into the network: one link per plane."""
        return self.num_planes * self.gpu_link_bps


class LeafSpinePacketModel:
    """One run of the leaf-spine packet model; `run()` returns the measured point."""

    network = "leafspine"

    def __init__(self, params: LeafSpinePacketParams, run: PacketRunConfig) -> None:
        self.params, self.run_config = params, run
        n, planes, pods = params.num_nodes, params.num_planes, params.num_pods
        self.slot_s = run.packet_bits / params.gpu_link_bps  # one tick
        to_slots = 1.0 / self.slot_s
        # queue layout: [GPU send queues | leaf ports to GPUs | leaf uplinks | spine ports]
        self.offset = {NIC: 0, DOWN: n * planes, UP: 2 * n * planes, SPINE: 2 * n * planes + pods * planes}
        num_queues = 2 * n * planes + 2 * pods * planes
        queue = np.arange(num_queues)
        self.kind = np.select([queue < self.offset[DOWN], queue < self.offset[UP], queue < self.offset[SPINE]],
                              [NIC, DOWN, UP], SPINE)
        local_index = queue - np.array([self.offset[k] for k in (NIC, DOWN, UP, SPINE)])[self.kind]
        self.plane = np.where(self.kind == SPINE, local_index // pods, local_index % planes)
        self.serialise_slots = np.where(np.isin(self.kind, (NIC, DOWN)), run.packet_bits / params.gpu_link_bps,
                                        run.packet_bits / params.uplink_bps) * to_slots
        # switches: one per leaf (pod, plane), then one spine per plane; GPU send queues have none
        num_leaves = pods * planes
        gpu_of = local_index // planes
        leaf_of = np.where(self.kind == DOWN, (gpu_of // params.gpus_per_pod) * planes + self.plane, local_index)
        self.switch_of = np.select([self.kind == NIC, self.kind == SPINE], [-1, num_leaves + self.plane], leaf_of)
        switch_packets = np.array([params.leaf_buffer_bytes // run.packet_bytes] * num_leaves
                                  + [params.spine_buffer_bytes // run.packet_bytes] * planes, dtype=np.int64)
        # buffer pools: a switch's whole buffer, or (static) each output port's equal share of it
        if params.buffer_policy == "static":
            on_switch = self.switch_of >= 0
            ports = np.bincount(self.switch_of[on_switch], minlength=switch_packets.size)
            self.buffer_of = np.where(on_switch, queue, -1)
            self.buffer_packets = np.zeros(num_queues, dtype=np.int64)
            owner = self.switch_of[on_switch]
            self.buffer_packets[on_switch] = switch_packets[owner] // ports[owner]
        else:
            self.buffer_of, self.buffer_packets = self.switch_of, switch_packets
        self.buffer_used = np.zeros(self.buffer_packets.size, dtype=np.int64)
        # head latency to the next output queue: into the spine from an uplink, into a leaf otherwise
        self.hop_slots = (params.propagation_s + np.where(self.kind == UP, params.spine_latency_s,
                                                          params.leaf_latency_s)) * to_slots
        self.wire_slots = params.propagation_s * to_slots

        self.traffic = LocalityTraffic(n, params.gpus_per_pod, run.load, run.locality)
        self.bank = FifoBank(num_queues, {"dst": np.int64, "birth": np.float64, "ready": np.float64, "local": bool},
                             initial_capacity=8 * n)
        self.link_free = np.zeros(num_queues)
        self.next_plane = np.zeros(n, dtype=np.int64)
        self.rng = np.random.default_rng(run.seed)
        start, total = run.slots(self.slot_s)
        self.stats = WindowStats(start, total)
        self.engine = SlottedEngine(total, self._step)
        self.totals = {"generated": 0, "delivered": 0, "lost": 0}

    # --- arrivals ------------------------------------------------------------------------------------
    def _generate(self, slot: int) -> None:
        planes = self.params.num_planes
        src, sub_slot = np.nonzero(self.rng.random((self.params.num_nodes, planes)) < self.run_config.load)
        self.stats.on_generated(slot, src.size)
        self.totals["generated"] += src.size
        if not src.size:
            return
        dst = self.traffic.destinations(self.rng, src)
        # round-robin striping: a GPU's packets of one tick (at most `planes`) use distinct planes
        plane = (self.next_plane[src] + occurrence_rank(src)) % planes
        self.next_plane += np.bincount(src, minlength=self.params.num_nodes)
        local = src // self.params.gpus_per_pod == dst // self.params.gpus_per_pod
        birth = slot + sub_slot / planes
        ids = self.bank.allocate(src.size, dst=dst, birth=birth, ready=birth, local=local)
        self.bank.enqueue(src * planes + plane, ids, distinct=True)

    def _switch_arrival(self, slot: int, payload: tuple[np.ndarray, np.ndarray]) -> None:
        """Packets entering output queues: admitted while their buffer pool has room for them."""
        queues, ids = payload
        order = np.argsort(self.bank.fields["ready"][ids], kind="stable")
        queues, ids = queues[order], ids[order]
        buffer = self.buffer_of[queues]
        dynamic = self.params.buffer_policy == "dynamic"
        arriving = np.bincount(buffer, minlength=self.buffer_used.size)
        if not dynamic and np.all(self.buffer_used + arriving <= self.buffer_packets):
            self.buffer_used += arriving
            self.bank.enqueue(queues, ids)
            return
        used, capacity = self.buffer_used[buffer], self.buffer_packets[buffer]
        fits = used + occurrence_rank(buffer) < capacity
        if dynamic:  # the threshold is taken from the free space before this batch
            threshold = self.params.dynamic_alpha * (capacity - used)
            fits &= self.bank.length[queues] + occurrence_rank(queues) < threshold
            if fits.all():
                self.buffer_used += arriving
                self.bank.enqueue(queues, ids)
                return
        dropped = ids.size - int(fits.sum())
        self.stats.on_lost(slot, self.bank.fields["local"][ids[~fits]])
        self.bank.release(ids[~fits])
        self.totals["lost"] += dropped
        self.buffer_used += np.bincount(buffer[fits], minlength=self.buffer_used.size)
        self.bank.enqueue(queues[fits], ids[fits])

    # --- links ---------------------------------------------------------------------------------------
    def _next_queue(self, queues: np.ndarray, dst: np.ndarray, local: np.ndarray) -> np.ndarray:
        """Output queue at the next switch for packets leaving `queues` (not GPU-facing ports)."""
        p = self.params
        kind, plane = self.kind[queues], self.plane[queues]
        down = self.offset[DOWN] + dst * p.num_planes + plane
        up = self.offset[UP] + (queues - self.offset[NIC]) // p.num_planes // p.gpus_per_pod * p.num_planes + plane
        spine = self.offset[SPINE] + plane * p.num_pods + dst // p.gpus_per_pod
        return np.where(kind == UP, spine, np.where((kind == NIC) & ~local, up, down))

    def _serve(self, slot: int) -> None:
        bank = self.bank
        ready_ports = np.flatnonzero((bank.length > 0) & (self.link_free < slot + 1))
        # every queued packet is ready before slot + 1, and a link never starts two packets per tick
        if not ready_ports.size:
            return
        ids = bank.head[ready_ports]
        start = np.maximum(self.link_free[ready_ports], bank.fields["ready"][ids])
        depart = start + self.serialise_slots[ready_ports]
        self.link_free[ready_ports] = depart
        bank.pop(ready_ports)
        buffers = self.buffer_of[ready_ports]
        self.buffer_used -= np.bincount(buffers[buffers >= 0], minlength=self.buffer_used.size)

        last = self.kind[ready_ports] == DOWN
        if last.any():
            delivered = ids[last]
            self.stats.on_delivered(depart[last] + self.wire_slots, bank.fields["birth"][delivered],
                                    bank.fields["local"][delivered])
            self.totals["delivered"] += delivered.size
            bank.release(delivered)
        onward = ~last
        if onward.any():
            moving = ids[onward]
            ready = depart[onward] + self.hop_slots[ready_ports[onward]]
            bank.fields["ready"][moving] = ready
            target = self._next_queue(ready_ports[onward], bank.fields["dst"][moving], bank.fields["local"][moving])
            # servable in the tick that contains `ready` (and never before the next tick)
            due = np.maximum(np.floor(ready).astype(np.int64), slot + 1)
            for when in np.unique(due):
                batch = due == when
                self.engine.after(int(when) - slot, self._switch_arrival, (target[batch], moving[batch]))

    def _step(self, slot: int) -> None:
        self._generate(slot)
        self._serve(slot)

    def run(self) -> PacketRunResult:
        self.engine.run()
        return self.stats.result(network=self.network, num_nodes=self.params.num_nodes,
                                 locality=self.run_config.locality, load=self.run_config.load, slot_s=self.slot_s,
                                 packet_slots_per_node=1.0 / self.params.num_planes)
