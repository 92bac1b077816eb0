"""Megatron's partition of a decoder-only GPT (kept names; the arithmetic lives in `workload/transformer/`).

`GptShape` is `ddlsim.workload.transformer.shape.DecoderShape` (a GPT is the dense case with learned
positions and tied embeddings), `GptPlan` is `DecoderPlan` and `partition_gpt` is
`partition_decoder`: see those modules for Megatron-LM's conventions (rank order, layer split,
vocabulary padding, global batch) and `transformer/memory.py` for the memory model.
"""

from __future__ import annotations

from ddlsim.workload.transformer.plan import DecoderPlan, partition_decoder
from ddlsim.workload.transformer.shape import DEFAULT_VOCAB_MULTIPLE, DecoderShape

GptShape = DecoderShape
GptPlan = DecoderPlan
partition_gpt = partition_decoder

__all__ = ["DEFAULT_VOCAB_MULTIPLE", "GptPlan", "GptShape", "partition_gpt"]
