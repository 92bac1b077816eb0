"""Capture-vs-analytic compute of an FSDP2 program (issue 32): a 4-layer Llama-style decoder
(hidden 1,024, 16 heads, 4 KV heads, FFN 4,096, vocabulary 32,000), ``fully_shard`` on every
layer and then on the whole model over 8 ranks, bf16, one sequence per rank, priced on the H100
SXM by the kernel roofline, against the analytic ZeRO-3 workload of the same shape (TP 1, DP 8,
ZeRO 3, micro-batch 1, no recompute).

Two programs:

- ``matched`` runs the kernels the analytic list describes: the fused RMSNorm, SwiGLU and
  cross-entropy of `fused_ops.py` (16-bit logits, an online softmax) and Megatron's
  mixed-precision Adam (`compute_cases.MasterAdam`: fp32 master weights and moments, after a
  gradient-norm clip) on each rank's shards;
- ``plain`` is `examples/hf_fsdp.py` as a user writes it: transformers' eager modules (RMSNorm in
  eight kernels, unfused SwiGLU), its own loss (fp32 log-softmax of every logit) and bf16 AdamW
  on the bf16 shards. The analytic side is not asked these kernels; its numbers show how far
  the two doors are when asked different programs.

Both sides are per iteration on rank 0: the capture's simulated compute time (`simulate_program`
on the ideal fabric, which prices every recorded kernel) and the sum of the analytic workload's
compute tasks. `PYTHONPATH=. python tests/capture/fsdp2_cases.py` prints the ratio of every case (both
programs, both lengths, the analytic side with and without the copies) and the matched program's
tables with the copies.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from compute_cases import MasterAdam, analytic_side, capture_side, pricing
from compute_cases import Model as PricedModel
from fused_ops import IGNORE, cross_entropy, productionize
from torch.distributed.fsdp import fully_shard

import ddlsim
from ddlsim.capture.graph import OP_KEY_COLUMNS
from ddlsim.capture.pricing import kernel_of, precision_of
from ddlsim.capture.records import COMPUTE
from ddlsim.compute.kernel_registry import kernels_for
from ddlsim.compute.kernel_roofline import kernel_time_s
from ddlsim.core.types import Precision
from ddlsim.core.work import ComputeTask
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.fsdp_copies import COPY_TASKS
from ddlsim.workload.transformer.hf_config import decoder_shape
from ddlsim.workload.transformer.workload import build_decoder_workload

RANKS = 8
LAYERS = 4
DECODER = dict(model_type="llama", hidden_size=1024, num_hidden_layers=LAYERS, num_attention_heads=16,
               num_key_value_heads=4, intermediate_size=4096, vocab_size=32000, rms_norm_eps=1e-5,
               tie_word_embeddings=False, hidden_act="silu", rope_theta=500000.0, attention_bias=False,
               mlp_bias=False)
FSDP_OPS = ("fsdp.all_gather_copy_in", "fsdp.split_with_sizes_copy", "fsdp.chunk_cat")  # _fsdp_collectives.py
PRICING = PricedModel("fsdp2_llama", device="h100_sxm", compute="roofline")


def decoder_config(seq: int) -> dict:
    return {**DECODER, "max_position_embeddings": seq}


class ShardMasterAdam(MasterAdam):
    """`MasterAdam` on the rank's FSDP2 shards: the 16-bit local shards are the model weights it
    reads gradients of and writes back to; the fp32 master weights and moments are of the shard."""

    def __init__(self, params: list[torch.nn.Parameter]) -> None:
        self.sharded = params
        super().__init__([p.to_local().detach() for p in params])

    @torch.no_grad()
    def step(self, closure=None):
        for local, param in zip(self.model_params, self.sharded, strict=True):
            local.grad = param.grad.to_local()
        super().step(closure)
        for param in self.sharded:
            param.grad = None


def matched_build(mesh, *, seq: int):
    """The decoder with the fused kernels and Megatron's Adam, FSDP2 over `mesh`."""
    import transformers

    settings = {key: value for key, value in decoder_config(seq).items() if key != "model_type"}
    config = transformers.LlamaConfig(**settings, use_cache=False)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = productionize(transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa"))
    finally:
        torch.set_default_dtype(previous)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.train()
    optimizer = ShardMasterAdam(list(model.parameters()))
    tokens = torch.randint(0, config.vocab_size, (1, seq))
    labels = torch.nn.functional.pad(tokens[:, 1:], (0, 1), value=IGNORE)

    def step() -> None:
        cross_entropy(model(input_ids=tokens).logits, labels)[0].backward()
        optimizer.step()

    return step


def capture(program: str, seq: int):
    if program == "matched":
        build = partial(matched_build, seq=seq)
    else:
        from examples.hf_fsdp import build as hf_fsdp

        overrides = {key: value for key, value in decoder_config(seq).items() if key != "model_type"}
        build = partial(hf_fsdp, family="llama", batch=1, seq_len=seq, **overrides)
    return ddlsim.capture(build, (RANKS,), ("dp",))


def analytic(seq: int, fsdp_copies: bool):
    shape = decoder_shape(decoder_config(seq), seq_len=seq)
    parallel = ParallelConfig(tensor=1, data=RANKS, zero=3, micro_batch=1, recompute="none", fsdp_copies=fsdp_copies)
    return build_decoder_workload("fsdp2_llama", shape, parallel, 10**15, global_batch=RANKS, num_steps=0,
                                  precision=Precision.BF16, grad_precision=Precision.BF16)


@dataclass(frozen=True)
class IterationComparison:
    capture_s: float
    analytic_s: float
    by_class: dict  # "phase:class" -> (capture s, analytic s), the whole iteration
    copies: tuple[float, float]  # FSDP2's copy kernels: (capture s, analytic s)

    @property
    def ratio(self) -> float:
        return self.analytic_s / self.capture_s

    @property
    def error(self) -> float:
        return self.ratio - 1

    def table(self) -> str:
        lines = [f"{'phase:class':32s} {'capture us':>11s} {'analytic us':>11s} {'diff us':>9s}"]
        for key, (captured, modelled) in sorted(self.by_class.items()):
            lines.append(f"{key:32s} {captured * 1e6:11.1f} {modelled * 1e6:11.1f} {(modelled - captured) * 1e6:+9.1f}")
        lines.append(f"of which FSDP2's copies: capture {self.copies[0] * 1e6:.1f} us (their ops before fusion), "
                     f"analytic {self.copies[1] * 1e6:.1f} us")
        lines.append(f"iteration compute: capture {self.capture_s * 1e3:.3f} ms, "
                     f"analytic {self.analytic_s * 1e3:.3f} ms, "
                     f"analytic / capture {self.ratio:.3f} ({100 * self.error:+.2f} %)")
        return "\n".join(lines)


def compare(program, seq: int, fsdp_copies: bool) -> IterationComparison:
    """`program` (a capture of `capture(...)`) against the analytic workload at `seq` tokens."""
    device, compute = pricing(PRICING)
    captured, capture_s, _ = capture_side(program, device, compute)
    workload = analytic(seq, fsdp_copies)
    modelled, analytic_s, _ = analytic_side(workload, device, compute)
    classes = defaultdict(lambda: [0.0, 0.0])
    for index, side in enumerate((captured, modelled)):
        for key, value in side.by_class_s.items():
            classes[key][index] += value
    by_class = {key: tuple(value) for key, value in classes.items() if max(map(abs, value)) > 1e-9}
    return IterationComparison(capture_s, analytic_s, by_class, (captured_copies_s(program, device, compute),
                                                                 analytic_copies_s(workload, device, compute)))


def captured_copies_s(program, device, compute) -> float:
    """Kernel time of rank 0's FSDP2 copy ops, as recorded (a capture's fusion may merge them
    with their neighbours)."""
    events = program.events
    rows = events[(events.kind == COMPUTE) & (events["rank"] == program.ranks[0]) & events.op.isin(FSDP_OPS)]
    return sum(kernel_time_s(kernel_of(tuple(getattr(row, column) for column in OP_KEY_COLUMNS)),
                             device.peak(precision_of(row.dtype)), device.memory_bandwidth_bytes_per_s,
                             compute.roofline.kernel) for row in rows.itertuples())


def analytic_copies_s(workload, device, compute) -> float:
    total = 0.0
    for block in workload.blocks:
        for task in block.tasks:
            if isinstance(task, ComputeTask) and task.name in COPY_TASKS:
                peak = device.peak(Precision(task.signature.precision))
                total += block.repeat * task.count * sum(
                    kernel_time_s(kernel, peak, device.memory_bandwidth_bytes_per_s, compute.roofline.kernel)
                    for kernel in kernels_for(task.signature, task.phase))
    return total


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # examples/
    for seq in (2048, 8192):
        for program_name in ("plain", "matched"):
            program = capture(program_name, seq)
            for copies in (False, True):
                result = compare(program, seq, copies)
                print(f"\n== {program_name} program, sequence {seq}, analytic fsdp_copies={copies}: "
                      f"analytic / capture {result.ratio:.3f}")
                if program_name == "matched" and copies:
                    print(result.table())
