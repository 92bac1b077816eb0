"""Rows and workloads of decoder configurations as the base of issue 34's speed work computed them.

    PYTHONPATH=<checkout of the base commit> python tests/workload/decoder_reference.py

writes ``tests/workload/decoder_reference.json``: for every configuration of `RUN_CASES`, the rows
of ``ddlsim.run`` (through the process-wide Session); for every one of `WORKLOAD_CASES`, the SHA-256
of ``repr`` of the `Workload` that `build_decoder_workload` returns (``repr`` writes every float
exactly, so equal digests mean equal tasks, sizes and plan fields bit for bit).
`tests/workload/test_decoder_reference.py` holds today's code to them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

GPT3 = ["experiment=single", "model=gpt", "model.d_model=12288", "model.heads=96", "model.layers=96",
        "model.seq_len=2048", "model.global_batch=1536", "device=h100_sxm", "fabric=superpod",
        "parallel.tensor=8", "parallel.pipeline=16"]
SMALL = ["experiment=single", "model=gpt", "model.d_model=2048", "model.heads=16", "model.layers=16",
         "model.global_batch=64", "device=h100_sxm", "fabric=superpod", "parallel.tensor=2", "parallel.pipeline=4"]
RUN_CASES = [
    *([*GPT3, "collective=ring", f"parallel.data={data}", f"parallel.micro_batch={micro}"]
      for data in (8, 16, 32) for micro in (1, 2, 4)),
    [*GPT3, "collective=best", "parallel.data=16", "parallel.micro_batch=2"],
    [*GPT3, "collective=best", "parallel.data=32", "parallel.micro_batch=1"],
    [*SMALL, "parallel.data=2"],
    [*SMALL, "parallel.data=2", "parallel.virtual_stages=2"],
    [*SMALL, "parallel.data=2", "parallel.first_stage_layers=2", "parallel.last_stage_layers=2"],
    [*SMALL, "parallel.data=4", "parallel.zero=1"],
    [*SMALL, "parallel.data=4", "parallel.zero=2", "parallel.micro_batch=2"],
    [*SMALL, "parallel.data=4", "parallel.zero=3"],
    [*SMALL, "parallel.data=4", "parallel.zero=3", "parallel.fsdp_copies=false"],
    [*SMALL, "parallel.data=2", "parallel.sequence_parallel=true"],
    [*SMALL, "parallel.data=2", "parallel.context=2"],
    [*SMALL, "parallel.data=2", "parallel.recompute=selective"],
    [*SMALL, "parallel.data=2", "parallel.recompute=none"],
    [*SMALL, "parallel.data=2", "parallel.activation_offload=true"],
    [*SMALL, "parallel.data=2", "model.precision=bf16"],
    [*SMALL, "parallel.data=2", "model.scatter_gather_p2p=false"],
    [*SMALL, "parallel.data=2", "model.attention=flash", "model.tied_embeddings=false"],
    [*SMALL, "parallel.data=2", "parallel.pipeline=1"],
    [*SMALL, "parallel.data=2", "fabric=ideal", "collective=best"],
    ["experiment=single", "model=hf", "model.config=mixtral_8x7b", "model.global_batch=64", "device=h100_sxm",
     "fabric=superpod", "parallel.tensor=2", "parallel.pipeline=4", "parallel.data=4", "parallel.expert=2",
     "parallel.sequence_parallel=true"],
]
# (shape name, global batch, parallel keywords) for `build_decoder_workload` of tests/workload/llm_fixtures.py
WORKLOAD_CASES = [
    ("llama_like", 32, {"tensor": 2, "pipeline": 2, "data": 2}),
    ("llama_like", 32, {"tensor": 2, "pipeline": 4, "data": 1, "virtual_stages": 2}),
    ("llama_like", 32, {"tensor": 1, "pipeline": 4, "data": 2, "zero": 3}),
    ("llama_like", 32, {"tensor": 4, "pipeline": 2, "data": 2, "sequence_parallel": True, "context": 2}),
    ("mixtral_like", 32, {"tensor": 2, "pipeline": 2, "data": 4, "expert": 2, "sequence_parallel": True}),
    ("mixtral_like", 32, {"tensor": 2, "pipeline": 2, "data": 4, "expert": 4, "sequence_parallel": True,
                          "zero": 1, "recompute": "selective"}),
]


def workload_digest(shape_name: str, global_batch: int, parallel: dict) -> str:
    sys.path.insert(0, str(Path(__file__).parent))
    import llm_fixtures

    workload = llm_fixtures.build(getattr(llm_fixtures, shape_name)(), global_batch, **parallel)
    return hashlib.sha256(repr(workload).encode()).hexdigest()


def run_rows(overrides: list[str]) -> list[dict]:
    import ddlsim

    return ddlsim.run(overrides).rows


def main() -> int:
    reference = {
        "runs": [{"overrides": case, "rows": run_rows(case)} for case in RUN_CASES],
        "workloads": [{"case": [name, batch, parallel], "sha256": workload_digest(name, batch, parallel)}
                      for name, batch, parallel in WORKLOAD_CASES],
    }
    path = Path(__file__).with_suffix(".json")
    path.write_text(json.dumps(reference, indent=0, sort_keys=True) + "\n")
    print(f"wrote {path}: {len(reference['runs'])} runs, {len(reference['workloads'])} workloads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
