"""RAMP's network transcoder (RAMP 6.2): wavelength, subnet, transceivers and timeslots per transfer.

For one step (a batch of concurrent node-to-node transfers) the transcoder decides

- the wavelength (6.2.1): broadcast-and-select subnets use the destination's receive wavelength
  (its node number); AWGR-based subnets (route-and-broadcast, route-and-switch) use the
  wavelength the grating routes from the source port to the destination port;
- the transceiver groups (6.2.2): a base group per source-destination pair (Eq. 2, or the
  rule a step needs to stay contention-free, see `BASE_RULES`), plus additional groups
  (Eq. 3) spaced evenly around the x groups; the subnet is then (source group, destination
  group, transceiver);
- the timeslots (6.2.3): every transfer takes ceil(bytes / (groups x b x payload per slot))
  slots, and transfers that would collide are moved to later rounds of slots.

A step is contention-free when no transmitter or receiver is used twice in a round and no
wavelength is used twice in one subnet (for AWGR subnets: one signal per star-coupler
wavelength or per crossbar port). `assign_step` guarantees it by construction (rounds) and
reports how many rounds it needed; `contention_violations` re-checks any assignment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.ramp.key_clashes import max_multiplicity, rounds_of_keys
from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.int_arrays import all_distinct, floor_mod

SUBNET_KINDS = ("broadcast_select", "route_broadcast", "route_switch")

BASE_RULES = {
    # Eq. 2: (g_src + g_dst + j_src) mod x.
    "eq2": lambda gs, js, gd, jd, x: floor_mod(gs + gd + js, x),
    # Steps whose members differ in both group and rack (step 3) collide at the receivers under
    # Eq. 2 when x is even (sources j and j + x/2 pick the same group); this rule does not.
    "dst_group_src_rack": lambda gs, js, gd, jd, x: floor_mod(gd + js, x),
}
# Generic steps (ring, trees, halving/doubling on RAMP) may have several sources in one rack
# sending to one group; adding the node numbers separates them. Takes node numbers too.
NUMBERED_RULES = {
    "eq2_numbered": lambda gs, js, ls, gd, jd, ld, x: floor_mod(gs + gd + js + ls + ld, x),
}

# The base rule each RAMP-x step uses; generic (non RAMP-x) steps use Eq. 2.
STEP_RULES = {1: "eq2", 2: "eq2", 3: "dst_group_src_rack", 4: "eq2"}


def check_subnet_kind(kind: str) -> str:
    if kind not in SUBNET_KINDS:
        raise ConfigError("subnet", kind, f"must be one of {', '.join(SUBNET_KINDS)}")
    return kind


def additional_transceivers(x: int, members: int) -> int:
    """Eq. 3: floor((x - floor(x/d)(d - 1)) / (d - 1)) extra groups per pair, d = subgroup size."""
    if members < 2:
        raise ConfigError("members", members, "a subgroup with communication has at least 2 members")
    d = members
    return max(0, (x - (x // d) * (d - 1)) // (d - 1))


def effective_io_bandwidth_bps(line_rate_bps: float, b: int, x: int, members: int) -> float:
    """Eq. 5: B b (1 + #TRX_additional)(d - 1), a node's unidirectional I/O in the step."""
    return line_rate_bps * b * (1 + additional_transceivers(x, members)) * (members - 1)


def payload_bytes_per_slot(line_rate_bps: float, slot_s: float, overhead: float) -> float:
    """Bytes one transceiver carries in one slot after the reconfiguration guard (950 B at 400G/20ns/5%)."""
    return line_rate_bps * slot_s * (1.0 - overhead) / 8.0


def wavelengths_of(kind: str, lam_src: np.ndarray, lam_dst: np.ndarray, num_wavelengths: int) -> np.ndarray:
    """6.2.1: the wavelength a transfer uses in its subnet."""
    if check_subnet_kind(kind) == "broadcast_select":
        return np.asarray(lam_dst, dtype=np.int64).copy()
    return floor_mod(np.asarray(lam_dst, dtype=np.int64) - lam_src, num_wavelengths)


def sharing_count(dims: RampDims, src: np.ndarray, dst: np.ndarray, kind: str) -> int:
    """Most transfers of a step that compete for one (subnet pair, wavelength) resource."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    return _StepResources(dims, src, dst, kind).sharing if src.size else 0


def transceivers_per_pair(dims: RampDims, members: int, peers_per_node: int, sharing: int, *,
                          use_all: bool = False) -> tuple[int, int]:
    """(transceiver groups per transfer, rounds): Eq. 3's groups, capped so no resource is overused.

    `use_all` is formulation 1's last step (6.2.2: "the number of transceiver groups used per
    communication is x"), still capped by sharing. When even one group per transfer overloads
    a node or a subnet wavelength, the transfers are spread over rounds instead.
    """
    x = dims.x
    wanted = x if use_all else 1 + additional_transceivers(x, members)
    per_pair = min(wanted, x // max(peers_per_node, 1), x // max(sharing, 1))
    if per_pair >= 1:
        return per_pair, 1
    return 1, math.ceil(max(peers_per_node, sharing) / x)


@dataclass(frozen=True, eq=False)
class StepAssignment:
    """The transcoder's output for one step: one row per (transfer, transceiver group)."""

    src: np.ndarray
    dst: np.ndarray
    transfer: np.ndarray          # index of the transfer this row belongs to
    transceiver: np.ndarray       # transceiver group used by this row
    wavelength: np.ndarray
    src_group: np.ndarray
    dst_group: np.ndarray
    round: np.ndarray             # which round of slots the row transmits in
    slots_per_round: int
    per_pair: int

    @property
    def num_rounds(self) -> int:
        return int(self.round.max()) + 1 if self.round.size else 0

    @property
    def num_slots(self) -> int:
        return self.num_rounds * self.slots_per_round

    def subnet(self, dims: RampDims) -> np.ndarray:
        """Subnet id (source group, destination group, transceiver group) of every row."""
        return (self.src_group * dims.x + self.dst_group) * dims.x + self.transceiver

    def rows(self, dims: RampDims) -> list[dict[str, int]]:
        """The instructions per node, as printable rows (first slot and slot count per row)."""
        first = self.round * self.slots_per_round
        subnet = self.subnet(dims)
        return [{"src": int(s), "dst": int(d), "wavelength": int(w), "subnet": int(n),
                 "subnet_groups": f"({int(gs)},{int(gd)},{int(t)})", "transceiver": int(t),
                 "first_slot": int(f), "slots": self.slots_per_round}
                for s, d, w, n, gs, gd, t, f in zip(self.src, self.dst, self.wavelength, subnet, self.src_group,
                                                    self.dst_group, self.transceiver, first)]


def _resource_bases(dims: RampDims, src: np.ndarray, dst: np.ndarray, kind: str,
                    coords_src: tuple[np.ndarray, ...], coords_dst: tuple[np.ndarray, ...]
                    ) -> list[tuple[str, np.ndarray, int]]:
    """(resource, key at transceiver group 0, multiplier): a row's key is base + transceiver * multiplier.

    Keys are non-negative and distinct for distinct resources; a transfer's coordinates and
    wavelength are computed once and serve every transceiver group it may use.
    """
    gs, js, ls = coords_src
    gd, jd, ld = coords_dst
    x, lam = dims.x, dims.wavelengths
    wave = wavelengths_of(kind, ls, ld, lam)
    pair = (gs * x + gd) * x  # the subnet (gs, gd, t) is pair + t
    bases = [("transmitter", src * x, 1), ("receiver", dst * x, 1)]
    if kind == "broadcast_select":
        bases.append(("subnet_wavelength", pair * lam + wave, lam))
    elif kind == "route_broadcast":
        bases.append(("star_coupler_wavelength", (pair * lam + ld) * lam + wave, lam * lam))
    else:
        port = (pair * lam + ld) * dims.racks
        bases.append(("crossbar_input", port + js, lam * dims.racks))
        bases.append(("crossbar_output", port + jd, lam * dims.racks))
    return [(name, base.astype(np.int64, copy=False), multiplier) for name, base, multiplier in bases]


def _shared_keys(dims: RampDims, src: np.ndarray, dst: np.ndarray, kind: str,
                 transceiver: np.ndarray) -> list[tuple[str, np.ndarray]]:
    bases = _resource_bases(dims, src, dst, kind, dims.coords(src), dims.coords(dst))
    return [(name, base + transceiver * multiplier) for name, base, multiplier in bases]


def contention_violations(dims: RampDims, assignment: StepAssignment, kind: str) -> dict[str, int]:
    """How many rows reuse a transmitter, receiver or subnet wavelength in the same round."""
    result = {}
    rounds = assignment.num_rounds or 1
    for name, key in _shared_keys(dims, assignment.src, assignment.dst, kind, assignment.transceiver):
        per_round = np.sort(key * rounds + assignment.round)
        result[name] = int(np.count_nonzero(per_round[1:] == per_round[:-1]))
    return result


def _base_groups(rule: str, coords_src: tuple[np.ndarray, ...], coords_dst: tuple[np.ndarray, ...],
                 x: int) -> np.ndarray:
    """The base transceiver group of every transfer under `rule`."""
    gs, js, ls = coords_src
    gd, jd, ld = coords_dst
    if rule in NUMBERED_RULES:
        return NUMBERED_RULES[rule](gs, js, ls, gd, jd, ld, x)
    return BASE_RULES[rule](gs, js, gd, jd, x)


def _spread_groups(base: np.ndarray, x: int, per_pair: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows (transfer, transceiver): base group plus groups spaced x // per_pair apart."""
    offsets = np.arange(per_pair, dtype=np.int64) * (x // per_pair)
    transfer = np.repeat(np.arange(base.size, dtype=np.int64), per_pair)
    transceiver = floor_mod(np.repeat(base, per_pair) + np.tile(offsets, base.size), x)
    return transfer, transceiver


def _rounds(dims: RampDims, src: np.ndarray, dst: np.ndarray, kind: str, transceiver: np.ndarray) -> np.ndarray:
    """Move rows that reuse a resource to later rounds until no round reuses one."""
    return rounds_of_keys([key for _name, key in _shared_keys(dims, src, dst, kind, transceiver)], src.size)


class _StepResources:
    """A step's transfers with what every rule and candidate group count reuses: coordinates,
    resource keys at transceiver group 0, node and subnet loads."""

    def __init__(self, dims: RampDims, src: np.ndarray, dst: np.ndarray, kind: str) -> None:
        self.dims = dims
        self.coords_src = dims.coords(src)
        self.coords_dst = dims.coords(dst)
        self.bases = _resource_bases(dims, src, dst, kind, self.coords_src, self.coords_dst)
        self.size = src.size
        self._peers: int | None = None
        self._sharing: int | None = None
        self._src, self._dst = src, dst

    @property
    def peers(self) -> int:
        if self._peers is None:
            self._peers = max(int(np.bincount(self._src).max()), int(np.bincount(self._dst).max()))
        return self._peers

    @property
    def sharing(self) -> int:
        if self._sharing is None:
            self._sharing = max(max_multiplicity(base) for name, base, _ in self.bases
                                if name != "receiver" and name != "transmitter")
        return self._sharing

    def row_keys(self, transfer: np.ndarray | None, transceiver: np.ndarray):
        """Resource keys of rows (transfer, transceiver); transfer None means one row per transfer."""
        for _name, base, multiplier in self.bases:
            yield (base if transfer is None else base[transfer]) + transceiver * multiplier

    def spread(self, base: np.ndarray, per_pair: int) -> tuple[np.ndarray | None, np.ndarray]:
        if per_pair == 1:
            return None, base % self.dims.x
        return _spread_groups(base, self.dims.x, per_pair)


def assign_step(dims: RampDims, src: np.ndarray, dst: np.ndarray, bytes_per_transfer: float, *,
                rule: str = "eq2", per_pair: int = 1, kind: str = "broadcast_select",
                payload_bytes: float = 950.0) -> StepAssignment:
    """Assign transceivers, wavelengths and rounds of slots to every transfer of one step.

    Each transfer uses `per_pair` transceiver groups: its base group (`rule`) and the groups
    spaced x // per_pair apart from it. Rows that would reuse a resource in a round move to
    the next round until none does.
    """
    check_subnet_kind(kind)
    if rule not in BASE_RULES and rule not in NUMBERED_RULES:
        raise ConfigError("rule", rule, f"must be one of {', '.join([*BASE_RULES, *NUMBERED_RULES])}")
    if not 1 <= per_pair <= dims.x:
        raise ConfigError("per_pair", per_pair, f"must be in [1, x = {dims.x}]")
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    base = _base_groups(rule, dims.coords(src), dims.coords(dst), dims.x)
    transfer, transceiver = _spread_groups(base, dims.x, per_pair)
    row_src, row_dst = src[transfer], dst[transfer]
    rounds = _rounds(dims, row_src, row_dst, kind, transceiver)
    gs, _, ls = dims.coords(row_src)
    gd, _, ld = dims.coords(row_dst)
    slot_bytes = per_pair * dims.b * payload_bytes
    slots = math.ceil(bytes_per_transfer / slot_bytes) if bytes_per_transfer > 0 else 0
    return StepAssignment(row_src, row_dst, transfer, transceiver, wavelengths_of(kind, ls, ld, dims.wavelengths),
                          gs, gd, rounds, slots, per_pair)


@dataclass(frozen=True)
class StepPlan:
    """What the transcoder settles for a step: groups per transfer and rounds of slots."""

    per_pair: int
    rounds: int
    members: int
    sharing: int

    @property
    def slowdown(self) -> float:
        """Time relative to one round at one group per transfer."""
        return self.rounds / self.per_pair


def plan_step(dims: RampDims, src: np.ndarray, dst: np.ndarray, *, members: int, rule: str = "eq2",
              use_all: bool = False, kind: str = "broadcast_select") -> StepPlan:
    """Most transceiver groups per transfer (Eqs. 3-4, capped by sharing) that stay contention-free.

    Candidates run from `transceivers_per_pair`'s bound down to 1; the first whose spaced
    assignment has no conflict is taken. If even one group conflicts, rounds resolve it. When a
    node or a subnet wavelength carries more than x transfers, the step needs at least
    ceil(load / x) rounds, which is taken without building the assignment.
    """
    return plan_step_rules(dims, src, dst, members=members, rules=(rule,), use_all=use_all, kind=kind)[0]


def plan_step_rules(dims: RampDims, src: np.ndarray, dst: np.ndarray, *, members: int, rules: tuple[str, ...],
                    use_all: bool = False, kind: str = "broadcast_select") -> list[StepPlan]:
    """`plan_step` for each base rule in `rules`, sharing the work that does not depend on the rule."""
    check_subnet_kind(kind)
    for rule in rules:
        if rule not in BASE_RULES and rule not in NUMBERED_RULES:
            raise ConfigError("rule", rule, f"must be one of {', '.join([*BASE_RULES, *NUMBERED_RULES])}")
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.size == 0:
        return [StepPlan(1, 0, members, 0) for _ in rules]
    step = _StepResources(dims, src, dst, kind)
    sharing = step.sharing
    bound, rounds = transceivers_per_pair(dims, members, step.peers, sharing, use_all=use_all)
    if rounds > 1:
        # More transfers than transceiver groups at a node or subnet wavelength: they are
        # time-multiplexed; the bound ceil(load / x) is exact for regular (symmetric) steps.
        return [StepPlan(1, rounds, members, sharing) for _ in rules]
    return [_plan_rule(step, rule, bound, members, sharing) for rule in rules]


def _plan_rule(step: _StepResources, rule: str, bound: int, members: int, sharing: int) -> StepPlan:
    base = _base_groups(rule, step.coords_src, step.coords_dst, step.dims.x)
    for per_pair in range(bound, 0, -1):
        transfer, transceiver = step.spread(base, per_pair)
        if all(all_distinct(key) for key in step.row_keys(transfer, transceiver)):
            return StepPlan(per_pair, 1, members, sharing)
    transfer, transceiver = step.spread(base, 1)
    rounds = rounds_of_keys(list(step.row_keys(transfer, transceiver)), transceiver.size)
    return StepPlan(1, int(rounds.max()) + 1, members, sharing)
