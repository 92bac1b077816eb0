"""Compute time per decoder layer of a captured Llama step (examples/llama_fsdp_tp.py), as priced.

    python scripts/capture_layer_compute.py --shape llama3_8b --layers 2 --seq 2048 8192 --mesh 8 8

Captures the example at each sequence length on the (dp, tp) mesh and prints, for every compute
setting given (``--compute``: names of configs/compute, or ``default`` with ``+fusion=...``
suffixes), the compute time of a decoder layer (forward + backward: the compute segments of the
captured rank labelled with a decoder layer, summed and divided by the layers), its FLOPs, and
the step's iteration time, then a layer's device time per kernel class (``--classes``). These
are the numbers to compare with the analytic path's per-layer compute (`model=hf`).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ddlsim  # noqa: E402
from ddlsim.capture.fusion import fuse_events  # noqa: E402
from ddlsim.capture.graph import OP_KEY_COLUMNS  # noqa: E402
from ddlsim.capture.pricing import SegmentPricer, kernel_class_of  # noqa: E402
from ddlsim.compute.options import build_compute  # noqa: E402
from ddlsim.core.registry import build, option_settings  # noqa: E402
from ddlsim.training.graph import OpKind  # noqa: E402


def compute_setting(text: str):
    name, _, fusion = text.partition("+fusion=")
    if not fusion:
        return None if name == "default" else name
    settings = option_settings("compute", name)
    return {**settings, "fusion": fusion.lower() == "true"}


LAYER = re.compile(r"\.layers\.\d+\.")


def layer_seconds(result, layers: int) -> tuple[float, float]:
    """(compute seconds, FLOPs) per decoder layer: the compute ops labelled with a layer, over `layers`."""
    ops = [op for op in result.graph.ops if op.kind is OpKind.COMPUTE and LAYER.search(op.label)]
    return sum(op.duration_s for op in ops) / layers, sum(op.task.flop for op in ops) / layers


def class_seconds(program, layers: int, device: str, compute) -> dict[str, tuple[float, float]]:
    """Per kernel class: (kernels, device seconds) per decoder layer, as `compute` prices them
    (``measured``: the ops replayed on this machine's GPU; ops that cannot be replayed, marked
    ``*``, keep their roofline price)."""
    device_spec = build("device", device)
    model = build_compute(compute, device_spec)
    measured = {}
    if model.source == "measured":
        from ddlsim.capture.replay import measure_ops

        measured = dict(measure_ops(program))
    events = fuse_events(program.events) if model.fusion and not measured else program.events
    pricer = SegmentPricer(model)
    rows = events[(events.kind == "compute") & (events.module + ".").str.contains(LAYER)]
    found: dict[str, tuple[float, float]] = {}
    for row in rows.itertuples(index=False):
        key = tuple(getattr(row, column) for column in OP_KEY_COLUMNS)
        name = kernel_class_of(row.op, row.gemm_m).value + ("*" if measured and key not in measured else "")
        count, seconds = found.get(name, (0, 0.0))
        found[name] = (count + 1 / layers, seconds + measured.get(key, pricer._op_s(key)[0]) / layers)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="llama3_8b")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--mesh", type=int, nargs=2, default=[8, 8])
    parser.add_argument("--device", default="h100_sxm")
    parser.add_argument("--compute", nargs="+", default=["default"])
    parser.add_argument("--classes", action="store_true", help="also print the layer's time per kernel class")
    args = parser.parse_args()
    from examples.llama_fsdp_tp import build

    print("| seq | compute | layer compute (ms) | layer TFLOP | iteration (ms) |")
    print("|---|---|---|---|---|")
    for seq in args.seq:
        start = time.perf_counter()
        program = ddlsim.capture(partial(build, shape=args.shape, seq_len=seq, num_hidden_layers=args.layers),
                                 tuple(args.mesh), ("dp", "tp"))
        seconds = time.perf_counter() - start
        for compute in args.compute:
            result = ddlsim.simulate(program, device=args.device, compute=compute_setting(compute))
            time_s, flop = layer_seconds(result, args.layers)
            print(f"| {seq} | {compute} | {time_s * 1e3:.2f} | {flop / 1e12:.3f} | "
                  f"{result.iteration_time_s * 1e3:.2f} |")
            if args.classes:
                parts = class_seconds(program, args.layers, args.device, compute_setting(compute))
                print("|  |  | " + ", ".join(f"{name} {count:g}: {seconds * 1e3:.3f} ms"
                                            for name, (count, seconds) in sorted(parts.items())) + " | | |")
        print(f"(captured in {seconds:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
