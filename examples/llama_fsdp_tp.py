"""(a) A Llama-style decoder from a `transformers` config (no download), trained with FSDP2 over
the ``dp`` mesh dimension and tensor plus sequence parallelism over ``tp`` (DTensor).

    program = ddlsim.capture(build, mesh_shape=(8, 8), mesh_dim_names=("dp", "tp"))
    ddlsim model=program model.entry=examples.llama_fsdp_tp:build model.mesh_shape=[8,8] \\
        model.mesh_dim_names=[dp,tp]

The tensor-parallel plan is torchtitan's: column-parallel Q, K, V, gate and up projections,
row-parallel output and down projections whose outputs are reduce-scattered over the sequence
(`Shard(1)`), sequence-parallel RMSNorms, a row-parallel embedding and a column-parallel output
layer whose logits stay split over the vocabulary for a loss-parallel cross-entropy. Every
decoder layer, and then the whole model, is wrapped with ``fully_shard``. `shape` picks a
shipped size (``tiny``, ``llama3_8b``, ``llama3_70b``); keyword arguments override its fields.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    loss_parallel,
    parallelize_module,
)

SHAPES = {
    "tiny": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=8,
                 intermediate_size=688, vocab_size=4096, seq_len=128),
    "llama3_8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                      intermediate_size=14336, vocab_size=128256, seq_len=8192),
    "llama3_70b": dict(hidden_size=8192, num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                       intermediate_size=28672, vocab_size=128256, seq_len=8192),
}


def llama(shape: str = "tiny", dtype: torch.dtype = torch.bfloat16, **overrides):
    """A `LlamaForCausalLM` of `dtype` built from its config alone (in a capture: fake tensors)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    settings = {**SHAPES[shape], **overrides}
    settings.pop("seq_len")
    config = LlamaConfig(**settings, max_position_embeddings=131072, attn_implementation="sdpa", use_cache=False)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        return LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)


def tensor_parallel(model, tp_mesh, sequence_parallel: bool = True) -> None:
    """torchtitan's Llama plan (see the module docstring); plain TP when `sequence_parallel` is off."""
    seq = Shard(1) if sequence_parallel else Replicate()
    norm = SequenceParallel() if sequence_parallel else None
    parallelize_module(model.model, tp_mesh, {
        # DTensors between layers, so that transformers sees the whole sequence (masks, positions)
        "embed_tokens": RowwiseParallel(input_layouts=Replicate(), output_layouts=seq, use_local_output=False),
        **({"norm": norm} if norm else {}),
    })
    parallelize_module(model.lm_head, tp_mesh, ColwiseParallel(input_layouts=seq, output_layouts=Shard(-1),
                                                               use_local_output=False))
    for layer in model.model.layers:
        plan = {
            "self_attn": PrepareModuleInput(input_kwarg_layouts={"hidden_states": seq},
                                            desired_input_kwarg_layouts={"hidden_states": Replicate()},
                                            use_local_output=not sequence_parallel),
            "self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(),
            "self_attn.o_proj": RowwiseParallel(output_layouts=seq, use_local_output=False),
            "mlp": PrepareModuleInput(input_layouts=(seq,), desired_input_layouts=(Replicate(),),
                                      use_local_output=not sequence_parallel),
            "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(output_layouts=seq, use_local_output=False),
        }
        if norm:
            plan.update({"input_layernorm": SequenceParallel(), "post_attention_layernorm": SequenceParallel()})
        parallelize_module(layer, tp_mesh, plan)


def build(mesh, *, shape: str = "tiny", batch: int = 1, seq_len: int = 0, sequence_parallel: bool = True,
          reshard_after_forward: bool = True, dtype: torch.dtype = torch.bfloat16, **overrides):
    model = llama(shape, dtype, **overrides)
    seq_len = seq_len or SHAPES[shape]["seq_len"]
    tensor_parallel(model, mesh["tp"], sequence_parallel)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh["dp"], reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh["dp"], reshard_after_forward=reshard_after_forward)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    positions = torch.arange(seq_len).unsqueeze(0)

    def step() -> None:
        tokens = torch.randint(0, model.config.vocab_size, (batch, seq_len))
        logits = model(tokens, position_ids=positions, use_cache=False).logits
        with loss_parallel():
            loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step
