"""training/schedules/: how a workload's task blocks become one iteration, stage by stage.

`dispatch.py` is the one door: it turns ``training.schedule`` into a schedule and imports every
schedule it can choose; no schedule imports it. Below it, by what each builds:

- the iteration graph, op by op: `sequential.py` (one stage), `one_f_one_b.py` (1F1B),
  `interleaved.py` (Megatron-Core's interleaved order) and `exchanges.py` (its graph, with the
  stage-to-stage exchanges), sharing `stages.py` (steps, stage streams, the per-iteration tail);
- the same iteration in closed form, for `training/analytic.py`: `steps.py` (each step priced
  once), `closed_form.py` (1F1B), `rounds.py` and `overlapped.py` (interleaved, a round at a
  time) and `tail.py`;
- `plan.py`: the pipeline's stages, micro-batches and virtual stages, as the workload plan says.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "SCHEDULES": "ddlsim.training.schedules.dispatch",
    "Schedule": "ddlsim.training.schedules.dispatch",
    "register_schedule": "ddlsim.training.schedules.dispatch",
    "select_schedule": "ddlsim.training.schedules.dispatch",
    "micro_batches": "ddlsim.training.schedules.plan",
    "pipeline_stages": "ddlsim.training.schedules.plan",
    "virtual_stages": "ddlsim.training.schedules.plan",
})
__all__ = [
    "SCHEDULES", "Schedule", "micro_batches", "pipeline_stages", "register_schedule", "select_schedule",
    "virtual_stages",
]
