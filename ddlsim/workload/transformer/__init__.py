"""Decoder-only LLMs, dense and mixture-of-experts, under today's parallelisms.

`shape.py` (parameters), `arithmetic.py` (FLOPs, activations), `layout.py` (rank order, group
layouts, the plan's rules), `memory.py` (ZeRO stages, recompute policies, pipeline schedules),
`plan.py` (the partition), `collectives.py` (collective calls per layer), `blocks.py` (the tasks
of one iteration), `workload.py` (the `Workload` and its result-row fields), `hf_config.py`
(shapes from transformers configs). docs/workload.md has the formulas.
"""
