"""A grid of collective prices kept as a file, so that speed changes can be held to the numbers
the code gave before them, float for float.

    PYTHONPATH=<checkout> python tests/network/price_grid.py            # rewrite the file from <checkout>
    PYTHONPATH=<checkout> python tests/network/price_grid.py --large    # the large cases too

`tests/network/data/price_grid.json` was written this way from the commit this file was added on
top of (before any of the speed changes it guards); `test_price_grid.py` prices every case again
and compares with `==`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

DATA = Path(__file__).with_name("data") / "price_grid.json"
FABRICS = ("ideal", "superpod", "torus2d", "leaf_spine", "ramp")
SIZES_BYTES = (1_000_003, 10**9)
SMALL_RANKS = (48, 1024)
# Large cases: the slow prices that the speed work of issue 34 targets, each priced in full.
LARGE = (
    [("torus2d", algorithm, op, 65536) for algorithm in ("pipelined_tree", "best", "double_binary_tree")
     for op in ("all_reduce", "broadcast", "reduce")]
    + [("superpod", algorithm, op, 65536) for algorithm in ("pipelined_tree", "best")
       for op in ("all_reduce", "broadcast", "reduce", "all_gather", "gather")]
    + [("ramp", algorithm, op, ranks) for ranks in (4096, 16384) for algorithm in ("rampx", "best")
       for op in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce")]
)


def make(fabric_name: str, ranks: int):
    from ddlsim.network import make_fabric

    builders = {
        "ideal": lambda: make_fabric("ideal", num_nodes=max(ranks, 2)),
        "superpod": lambda: make_fabric("superpod", num_nodes=ranks),
        "torus2d": lambda: make_fabric("torus2d", num_nodes=ranks, dims=[]),
        "leaf_spine": lambda: make_fabric("leaf_spine", num_nodes=ranks, tier_sizes=[max(ranks, 16)]),
        "ramp": lambda: make_fabric("ramp"),
    }
    return builders[fabric_name]()


def small_cases() -> list[tuple[str, str, str, int]]:
    from ddlsim.app.catalog import load_all
    from ddlsim.core.registry import ALGORITHMS
    from ddlsim.core.types import CollectiveOp

    load_all()
    ops = [op.value for op in CollectiveOp if op is not CollectiveOp.SEND_RECV]
    return [(fabric, entry.name, op, ranks) for fabric in FABRICS for entry in ALGORITHMS for op in ops
            for ranks in SMALL_RANKS]


def price(fabric_name: str, algorithm: str, op: str, ranks: int) -> list | None:
    """[algorithm, time_s, latency_s, transfer_s, compute_s, num_steps] per size, or None when infeasible."""
    from ddlsim.core.errors import InfeasibleError
    from ddlsim.network import CollectiveEstimator

    estimator = CollectiveEstimator(make(fabric_name, ranks), algorithm)
    rows = []
    for size_bytes in ((0,) if op == "barrier" else SIZES_BYTES):
        try:
            result = estimator.estimate(op, size_bytes, num_ranks=ranks)
        except InfeasibleError:
            return None
        rows.append([result.algorithm, result.time_s, result.latency_s, result.transfer_s, result.compute_s,
                     result.num_steps])
    return rows


def key(case: tuple[str, str, str, int]) -> str:
    return "/".join(map(str, case))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true")
    args = parser.parse_args()
    import ddlsim

    cases = small_cases() + (LARGE if args.large else [])
    table = {}
    for case in cases:
        ddlsim.clear_caches()
        table[key(case)] = price(*case)
    DATA.parent.mkdir(exist_ok=True)
    lines = [f"{json.dumps(name)}: {json.dumps(table[name])}" for name in sorted(table)]
    DATA.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"{len(table)} cases written to {DATA}")


if __name__ == "__main__":
    main()
