"""The transformer generator: one package, two flavours (docs/workload.md).

Decoders (`model=gpt`, the decoders of `model=hf`), dense and mixture-of-experts, under today's
parallelisms, and the Megatron-2021 flavour (`model=megatron`: RAMP's scaling-law models and
Tables 9 and 10; the encoders of `model=hf`; TopoOpt's BERT), which partitions TP x DP to fill
device memory. Shared: `layer.py` (one layer's parameters, FLOPs, activations, TP messages),
`stack.py` (a layer stack; a shape from a parameter count), `layout.py` (rank order, group
layouts, the plan's rules), `collectives.py` (collective calls per layer), the kernel lists'
FLOPs and bytes (`blocks.KernelBytes`) and `workload.py` (the `Workload` and its result-row
fields: the generator's entry points). Decoders: `shape.py` (parameters), `arithmetic.py`
(FLOPs, activations), `memory.py` (ZeRO stages, recompute policies, pipeline schedules),
`stages.py` (layers per stage), `plan.py` (the partition), `blocks.py` (the tasks of one
iteration), `hf_config.py` and `hf_fields.py` (shapes from transformers configs). Megatron-2021:
`megatron2021_plan.py` (the partition) and `megatron2021_blocks.py` (the tasks).
"""
