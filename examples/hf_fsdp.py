"""Any `transformers` decoder built from its config alone (no download), trained with FSDP2.

    program = ddlsim.capture(partial(build, family="qwen2"), mesh_shape=(8,), mesh_dim_names=("dp",))

`family` picks a tiny shipped config (``llama``, ``qwen2``, ``mistral``, ``mixtral``, ``gpt2``);
keyword arguments override its fields, so a real size is one call away (e.g.
``hidden_size=4096, num_hidden_layers=32, ...``). Every decoder layer, then the whole model, is
wrapped with ``fully_shard`` over the ``dp`` dimension; the step is the model's own causal-LM loss.
Mixture-of-experts families run their experts with transformers' ``grouped_mm`` implementation
(its default where ``torch._grouped_mm`` exists): tokens sorted by expert, one grouped GEMM per
projection, shapes independent of the routing (the group offsets are data, not shapes).
``experts="batched_mm"`` picks the implementation that gathers a copy of its expert's weights
for every (token, expert) pair and multiplies them one token at a time (docs/capture.md, MoE).
"""

from __future__ import annotations

import torch
from torch.distributed.fsdp import fully_shard

TINY = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=256, vocab_size=1024, max_position_embeddings=512)
FAMILIES = {
    "llama": ("LlamaConfig", TINY),
    "qwen2": ("Qwen2Config", TINY),
    "mistral": ("MistralConfig", {**TINY, "sliding_window": None}),
    "mixtral": ("MixtralConfig", {**TINY, "num_local_experts": 4, "num_experts_per_tok": 2}),
    "gpt2": ("GPT2Config", dict(n_embd=128, n_layer=2, n_head=4, vocab_size=1024, n_positions=512)),
}


def decoder(family: str, dtype: torch.dtype = torch.bfloat16, experts: str = "grouped_mm", **overrides):
    import transformers

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    class_name, settings = FAMILIES[family]
    config = getattr(transformers, class_name)(**{**settings, **overrides}, use_cache=False)
    if family == "mixtral":
        config._experts_implementation = experts
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    finally:
        torch.set_default_dtype(previous)


def decoder_layers(model) -> list:
    body = getattr(model, "model", None) or model.transformer
    return list(getattr(body, "layers", None) or body.h)


def build(mesh, *, family: str = "llama", batch: int = 2, seq_len: int = 64, dtype: torch.dtype = torch.bfloat16,
          reshard_after_forward: bool = True, experts: str = "grouped_mm", **overrides):
    model = decoder(family, dtype, experts, **overrides)
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    vocab = model.config.vocab_size

    def step() -> None:
        tokens = torch.randint(0, vocab, (batch, seq_len))
        model(input_ids=tokens, labels=tokens).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step
