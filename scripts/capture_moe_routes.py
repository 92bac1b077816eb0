"""transformers' two MoE expert routes, captured and priced: ``grouped_mm`` against ``batched_mm``.

    python scripts/capture_moe_routes.py [--tokens 1024] [--device h100_sxm]

Captures one Mixtral-8x7B decoder layer (hidden 4096, FFN 14336, 8 experts, top-2, 32/8 heads)
of examples/hf_fsdp.py with FSDP over 8 ranks, once per experts implementation, and prints the
layer's compute time, the step's FLOPs, bytes moved and peak live memory per rank, and the
experts' heaviest ops (docs/capture.md, "Grouped GEMM"). The peak check is off, since
``batched_mm`` does not fit any GPU at this size.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ddlsim  # noqa: E402
from ddlsim.training.graph import OpKind  # noqa: E402

MIXTRAL_8X7B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=1, num_attention_heads=32,
                    num_key_value_heads=8, num_local_experts=8, num_experts_per_tok=2, vocab_size=32000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--device", default="h100_sxm")
    args = parser.parse_args()
    from examples.hf_fsdp import build

    for experts in ("grouped_mm", "batched_mm"):
        program = ddlsim.capture(partial(build, family="mixtral", experts=experts, batch=1, seq_len=args.tokens,
                                         **MIXTRAL_8X7B), (8,), ("dp",))
        result = ddlsim.simulate(program, device=args.device, check_memory=False)
        layer = [op for op in result.graph.ops if op.kind is OpKind.COMPUTE and ".layers.0" in op.label]
        compute = program.compute
        moved = (compute.read_bytes + compute.write_bytes).sum()
        print(f"{experts}: layer compute {sum(op.duration_s for op in layer) * 1e3:.1f} ms, "
              f"step {compute.flop.sum() / 1e12:.3f} TFLOP, {moved / 1e9:.1f} GB moved, "
              f"peak {program.peak_memory_bytes[0] / 1e9:.1f} GB")
        experts_ops = compute[compute.module.str.contains("experts")]
        table = experts_ops.groupby("op").agg(calls=("flop", "size"), gflop=("flop", "sum"), read=("read_bytes", "sum"),
                                              written=("write_bytes", "sum"))
        table[["gflop", "read", "written"]] /= 1e9
        print(table.sort_values("read").tail(4).to_string(float_format="%.1f"), end="\n\n")


if __name__ == "__main__":
    main()
