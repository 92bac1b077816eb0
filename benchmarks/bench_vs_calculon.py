"""ddlsim beside Calculon on the same configurations: CPU time per configuration and the iteration each prices.

    python benchmarks/bench_vs_calculon.py [--repeats 5] [--calculon-system PATH] [--tiny]

The configurations are issue 34's (`bench_session.py`'s ``gpt3`` rows): GPT-3 175B (hidden 12,288,
96 heads, 96 layers, sequence 2,048, global batch 1,536) with TP 8 x PP 16 on 1,024, 2,048 and
4,096 H100s (DP 8, 16, 32), micro-batches of 1, 2 and 4, full recomputation (ddlsim in bf16, Calculon in
fp16: its H100 system file has no bf16 entry, and both run at the same tensor-core rate). ddlsim runs each
through a warm `ddlsim.Session` (``collective=best`` on the DGX SuperPod); the time is CPU time
(`time.process_time`) per configuration, the median of ``--repeats`` runs.

Calculon (Isaev et al., SC'23; MIT licence) is not on the package index. When a user has fetched
its source tree and installed it (``pip install <calculon checkout>``), ``import calculon`` works
and this script times its `Llm` model (construction, ``compile``, ``run``) on the same
configurations, with the system file of ``--calculon-system`` (default: ``systems/h100_80g_nvl8.json``
beside the installed package's source tree, where an editable install leaves it). Otherwise it
prints ddlsim alone and says why. The two price different machines (Calculon's system file against
ddlsim's `h100_sxm` and SuperPod), so compare their CPU time, and read the iteration times as a
sanity check, not as a validation.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_session import GPT3_BASE, GPT3_POINTS  # noqa: E402
from timing import load_average  # noqa: E402

GPT3_175B = {"hidden": 12288, "feedforward": 4 * 12288, "seq_size": 2048, "attn_heads": 96, "attn_size": 128,
             "num_blocks": 96}
GLOBAL_BATCH, TENSOR, PIPELINE = 1536, 8, 16


def points(tiny: bool) -> list[tuple[int, int]]:
    """(data-parallel degree, micro-batch) of every configuration."""
    pairs = [(int(data.split("=")[1]), int(micro.split("=")[1])) for data, micro in GPT3_POINTS]
    return pairs[:2] if tiny else pairs


def median_cpu_s(run, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        began = time.process_time()
        result = run()
        times.append(time.process_time() - began)
    return statistics.median(times), result


def ddlsim_rows(pairs: list[tuple[int, int]], repeats: int) -> list[tuple[float, float]]:
    """(CPU seconds per configuration, iteration seconds) of each pair through a warm Session."""
    import ddlsim

    session = ddlsim.Session([*GPT3_BASE, "collective=best", "parallel.recompute=full"])
    session.run([f"parallel.data={pairs[0][0]}", f"parallel.micro_batch={pairs[0][1]}"])  # imports, composition
    rows = []
    for data, micro in pairs:
        overrides = [f"parallel.data={data}", f"parallel.micro_batch={micro}"]
        session.run(overrides)  # this configuration's first prices
        cpu, result = median_cpu_s(lambda overrides=overrides: session.run(overrides), repeats)
        rows.append((cpu, float(result.rows[0]["iteration_time_s"])))
    return rows


def calculon_system_path(given: Path | None) -> Path | None:
    if given is not None:
        return given
    import calculon

    candidate = Path(calculon.__file__).resolve().parents[1] / "systems" / "h100_80g_nvl8.json"
    return candidate if candidate.exists() else None


def execution_config(fields: list[str], data: int, micro: int) -> dict | None:
    """Calculon's execution fields for one configuration (by name; None if this Calculon asks for others)."""
    values = {"num_procs": TENSOR * PIPELINE * data, "tensor_par": TENSOR, "pipeline_par": PIPELINE, "data_par": data,
              "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1, "batch_size": GLOBAL_BATCH,
              "microbatch_size": micro, "datatype": "float16", "fused_activation": True,
              "attention_type": "multihead", "activation_recompute": "full", "pipeline_interleaving": 1,
              "optimizer_sharding": False, "tensor_par_comm_type": "ar", "tensor_par_overlap": "none",
              "seq_par_ag_redo": False, "data_par_overlap": False, "weight_offload": False,
              "activations_offload": False, "optimizer_offload": False, "training": True}
    if set(fields) - set(values):
        return None
    return {field: values[field] for field in fields}


def calculon_rows(pairs: list[tuple[int, int]], repeats: int, system_path: Path) -> list[tuple[float, float]] | str:
    """(CPU seconds per configuration, iteration seconds) of Calculon's model, or why it could not run."""
    import json

    from calculon import System
    from calculon.llm import Llm

    fields = list(Llm.Execution.fields())
    system = System(json.loads(system_path.read_text()))
    application = Llm.Application(dict(GPT3_175B))
    logger = logging.getLogger("calculon")
    rows = []
    for data, micro in pairs:
        config = execution_config(fields, data, micro)
        if config is None:
            return f"this Calculon's execution fields are not the ones this script knows: {fields}"

        def run(config=config):
            model = Llm(application, logger)
            model.compile(system, Llm.Execution.from_json(config))
            model.run(system)
            return model

        cpu, model = median_cpu_s(run, repeats)
        rows.append((cpu, float(model.get_total_time())))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per configuration (the median is printed)")
    parser.add_argument("--calculon-system", type=Path, help="Calculon's system JSON (an H100 of its source tree)")
    parser.add_argument("--tiny", action="store_true", help="two configurations, one run each")
    args = parser.parse_args()
    repeats = 1 if args.tiny else args.repeats
    pairs = points(args.tiny)
    print(load_average())
    ours = ddlsim_rows(pairs, repeats)
    try:
        import calculon  # noqa: F401
    except ImportError:
        theirs: list[tuple[float, float]] | str = ("Calculon is not importable (it is not on the package index: "
                                                    "fetch its source tree and `pip install` it to compare)")
    else:
        system = calculon_system_path(args.calculon_system)
        theirs = (calculon_rows(pairs, repeats, system) if system is not None else
                  "Calculon is installed, but no system file: pass --calculon-system")
    print(f"GPT-3 175B, TP {TENSOR} x PP {PIPELINE}, global batch {GLOBAL_BATCH}; CPU time per configuration "
          f"(median of {repeats})")
    header = "| GPUs | micro-batch | ddlsim CPU | ddlsim iteration |"
    if isinstance(theirs, list):
        header += " Calculon CPU | Calculon iteration | CPU ratio |"
    print(header)
    for index, (data, micro) in enumerate(pairs):
        cpu, iteration = ours[index]
        line = f"| {TENSOR * PIPELINE * data:,} | {micro} | {cpu * 1e3:.2f} ms | {iteration:.3f} s |"
        if isinstance(theirs, list):
            their_cpu, their_iteration = theirs[index]
            line += f" {their_cpu * 1e3:.2f} ms | {their_iteration:.3f} s | {cpu / their_cpu:.2f} |"
        print(line)
    median = statistics.median(cpu for cpu, _ in ours)
    print(f"ddlsim: median {median * 1e3:.2f} ms CPU per configuration")
    if isinstance(theirs, list):
        their_median = statistics.median(cpu for cpu, _ in theirs)
        print(f"Calculon: median {their_median * 1e3:.2f} ms CPU per configuration; ddlsim / Calculon "
              f"{median / their_median:.2f}")
    else:
        print(theirs)
    print(load_average())


if __name__ == "__main__":
    main()
