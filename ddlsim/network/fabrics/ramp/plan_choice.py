"""The transcoder's fastest plan for a step over several base rules, without planning every rule.

`RampFabric.step_plan` keeps the plan with the smallest slowdown (rounds / groups per transfer)
over the base rules, the first rule on ties. `transcoder.plan_step_rules` plans every rule in
full; `fastest_plan` returns the same plan with less work, because

- one round at p groups per transfer is slowdown 1 / p, and the most groups any rule may use is
  the step's bound: a rule that reaches it wins (no later rule is strictly faster), and a rule
  only needs to try group counts above the best found so far;
- a rule that fits in no single round needs two or more rounds at one group (slowdown >= 2), so
  such rules' rounds are only counted when no rule fits in one round.
"""

from __future__ import annotations

import numpy as np

from ddlsim.network.fabrics.ramp import transcoder
from ddlsim.network.fabrics.ramp.key_clashes import rounds_of_keys
from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.int_arrays import all_distinct


def fastest_plan(dims: RampDims, src: np.ndarray, dst: np.ndarray, *, members: int, rules: tuple[str, ...],
                 use_all: bool = False, kind: str = "broadcast_select") -> transcoder.StepPlan:
    """The plan of the first rule with the smallest slowdown (the choice over `plan_step_rules`)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.size == 0:
        return transcoder.plan_step_rules(dims, src, dst, members=members, rules=rules[:1], use_all=use_all,
                                          kind=kind)[0]
    step = transcoder._StepResources(dims, src, dst, transcoder.check_subnet_kind(kind))
    sharing = step.sharing
    bound, rounds = transcoder.transceivers_per_pair(dims, members, step.peers, sharing, use_all=use_all)
    if rounds > 1:
        return transcoder.StepPlan(1, rounds, members, sharing)
    best_groups = 0  # the most groups per transfer any rule fits in one round so far
    unfitted = []
    for rule in rules:
        base = transcoder._base_groups(rule, step.coords_src, step.coords_dst, dims.x)
        for per_pair in range(bound, best_groups, -1):
            transfer, transceiver = step.spread(base, per_pair)
            if all(all_distinct(key) for key in step.row_keys(transfer, transceiver)):
                best_groups = per_pair
                break
        else:
            if best_groups == 0:
                unfitted.append(base)
        if best_groups == bound:
            break
    if best_groups:
        return transcoder.StepPlan(best_groups, 1, members, sharing)
    fewest = None
    for base in unfitted:
        transfer, transceiver = step.spread(base, 1)
        needed = int(rounds_of_keys(list(step.row_keys(transfer, transceiver)), transceiver.size).max()) + 1
        if fewest is None or needed < fewest:
            fewest = needed
    return transcoder.StepPlan(1, fewest, members, sharing)
