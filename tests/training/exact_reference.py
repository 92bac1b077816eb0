"""Bit-exact reference values of the analytic pipelined iteration, stored from the code they guard.

`test_exact_reference.py` recomputes every case below and compares it with
``data/exact_reference.json`` with ``==`` on floats (stored as ``float.hex``): the fast paths of
`ddlsim.training.analytic` and `ddlsim.training.schedules.rounds` must keep every number bit for
bit. The file was written by this module at the commit before those paths were sped up:

    PYTHONPATH=. python tests/training/exact_reference.py --write

Cases: the interleaved round engine on random chunk costs (short pipelines stepped round by
round, long ones whose steady middle is skipped, GPT-like ones with equal middle chunks, with and
without the traced stage and the last backward starts), and `analytic_iteration` on the grid of
`test_interleaved_fast_path.py`, on random pipelines (`test_analytic.random_pipeline`) and on the
twelve configurations of ``benchmarks/bench_iteration.py`` with closed-form fake prices.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "exact_reference.json"


def _hex(value: float) -> str:
    return "nan" if math.isnan(value) else float(value).hex()


def _floats(values) -> list[str]:
    return [_hex(float(value)) for value in np.ravel(np.asarray(values, dtype=float))]


def summary_record(summary) -> dict:
    """Every field of an `IterationSummary`, floats as hex strings."""
    if summary is None:
        return {"none": True}
    record: dict = {}
    for name, value in vars(summary).items():
        if name == "collectives":
            record[name] = [{key: _hex(item) if isinstance(item, float) else item for key, item in vars(c).items()}
                            for c in value]
        elif name == "compute_time_by_source_s":
            record[name] = [[source, _hex(time_s)] for source, time_s in value]
        elif isinstance(value, float):
            record[name] = _hex(value)
        else:
            record[name] = list(value) if isinstance(value, tuple) else value
    return record


def ends_record(result) -> dict:
    return {"end_s": _floats(result.end_s), "last_backward_start_s": _floats(result.last_backward_start_s),
            "intervals": [[_hex(start), _hex(end)] for start, end in result.intervals]}


def _round_costs(rng: random.Random, stages: int, virtual: int, gpt_like: bool):
    chunks = stages * virtual
    if gpt_like:  # equal middle chunks, a heavier first (embedding) and last (output layer) one
        body_f, body_b = [0.0186 + 1e-4 * rng.random()] * chunks, [0.0529 + 1e-4 * rng.random()] * chunks
        body_f[0] += 0.0009 * rng.random()
        body_f[-1] += 0.003 * rng.random()
        body_b[-1] += 0.006 * rng.random()
        send = 0.0005 + 1e-5 * rng.random()
        send_f, send_b = [send] * chunks, [send] * chunks
    else:
        body_f = [rng.choice([0.5, 1.0, 1.5, 3.0]) + rng.random() * 0.01 for _ in range(chunks)]
        body_b = [rng.choice([0.5, 1.0, 1.5, 3.0]) + rng.random() * 0.01 for _ in range(chunks)]
        send_f = [rng.choice([0.0, 0.1, 0.3, 1.0]) + rng.random() * 1e-3 for _ in range(chunks)]
        send_b = [rng.choice([0.0, 0.1, 0.3, 1.0]) + rng.random() * 1e-3 for _ in range(chunks)]
    send_f[-1] = send_b[0] = 0.0  # nothing leaves the last chunk forward, chunk 0 back

    def table(values: list[float]) -> np.ndarray:
        return np.array(values).reshape(virtual, stages)

    return table(body_f), table(body_b), table(send_f), table(send_b)


def round_cases() -> Iterator[tuple[str, Callable[[], dict]]]:
    from ddlsim.training.schedules.rounds import interleaved_ends

    for seed in range(90):
        rng = random.Random(seed)
        gpt_like = seed % 3 == 0
        stages = rng.choice([8, 12, 16, 24]) if gpt_like and seed % 2 else rng.randint(2, 6)
        virtual = rng.randint(2, 4)
        micro = stages * rng.choice([1, 2, 3, 5, 9, 17, 30])
        costs = _round_costs(rng, stages, virtual, gpt_like)
        trace = rng.randrange(stages) if seed % 4 == 1 else None
        records = seed % 5 < 2

        def run(costs=costs, micro=micro, trace=trace, records=records) -> dict:
            return ends_record(interleaved_ends(*costs, micro, trace, record_starts=records))

        yield f"rounds seed={seed} p={stages} v={virtual} m={micro} trace={trace} records={records}", run


def _fake_pricer(alpha_s: float = 1e-5, bytes_per_s: float = 1e9, flop_per_s: float = 1e12):
    from training_fakes import AlphaBeta, FlopTimer

    from ddlsim.training import Pricer

    return Pricer(AlphaBeta(alpha_s=alpha_s, bytes_per_s=bytes_per_s, reduction_share=0.1), FlopTimer(flop_per_s))


def grid_cases() -> Iterator[tuple[str, Callable[[], dict]]]:
    from test_interleaved_fast_path import GRID, gpt_pipeline

    from ddlsim.training import Overlap, TrainingSettings
    from ddlsim.training.analytic import analytic_iteration

    for stages, virtual, factor, p2p, uneven in GRID:
        for overlap in (Overlap.NONE, Overlap.DP_BACKWARD):
            def run(stages=stages, virtual=virtual, factor=factor, p2p=p2p, uneven=uneven, overlap=overlap) -> dict:
                workload = gpt_pipeline(stages, virtual, factor * stages, uneven)
                settings = TrainingSettings(overlap=overlap, overlap_p2p_comm=p2p, bucket_size_bytes=2**16)
                return summary_record(analytic_iteration(workload, _fake_pricer(), settings))

            yield f"grid p={stages} v={virtual} k={factor} p2p={p2p} uneven={uneven} {overlap.value}", run


def random_cases() -> Iterator[tuple[str, Callable[[], dict]]]:
    from test_analytic import random_pipeline
    from training_fakes import AlphaBeta, FlopTimer

    from ddlsim.training import Overlap, Pricer, TrainingSettings
    from ddlsim.training.analytic import analytic_iteration

    for seed in range(150):
        def run(seed=seed) -> dict:
            rng = random.Random(seed)
            stages = rng.randint(1, 6)
            virtual = 1 if stages == 1 else rng.choice([1, 1, 2, 3])
            micro = rng.randint(1, 12) * stages if virtual > 1 else rng.randint(1, 4 * stages + 3)
            p2p = virtual > 1 and rng.random() < 0.4
            workload = random_pipeline(rng, stages, virtual, micro)
            pricer = Pricer(AlphaBeta(alpha_s=rng.choice([0.0, 0.25]), bytes_per_s=rng.choice([1.0, 3.0]),
                                      reduction_share=0.25), FlopTimer())
            settings = TrainingSettings(overlap=Overlap.DP_BACKWARD if rng.random() < 0.5 else Overlap.NONE,
                                        bucket_size_bytes=rng.choice([3, 8, 1000]), overlap_p2p_comm=p2p)
            return summary_record(analytic_iteration(workload, pricer, settings))

        yield f"random seed={seed}", run


def bench_cases() -> Iterator[tuple[str, Callable[[], dict]]]:
    sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
    from bench_iteration import CASES, MEMORY_BYTES

    import ddlsim.workload.models  # noqa: F401  (registers model=gpt and model=hf)
    from ddlsim.core.registry import MODELS
    from ddlsim.training import Overlap, TrainingSettings
    from ddlsim.training.analytic import analytic_iteration
    from ddlsim.workload.parallel import ParallelConfig

    for case in CASES:
        for overlap in (Overlap.NONE, Overlap.DP_BACKWARD):
            def run(case=case, overlap=overlap) -> dict:
                options = dict(case.model)
                model = MODELS.make(options.pop("name"), **options)
                workload = model.build_workload(ParallelConfig(**case.parallel), MEMORY_BYTES)
                settings = TrainingSettings(overlap=overlap)
                return summary_record(analytic_iteration(workload, _fake_pricer(1e-5, 5e10, 3e14), settings))

            yield f"bench {case.label} {overlap.value}", run


def all_cases() -> Iterator[tuple[str, Callable[[], dict]]]:
    yield from round_cases()
    yield from grid_cases()
    yield from random_cases()
    yield from bench_cases()


def main() -> None:
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: PYTHONPATH=. python tests/training/exact_reference.py --write")
    sys.path.insert(0, str(HERE))
    values = {name: run() for name, run in all_cases()}
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(values, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(values)} cases to {DATA}")


if __name__ == "__main__":
    main()
