"""The load sweep: points in order, rows complete, parallel runs identical to serial ones."""

import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.packet.experiment import LoadSweep, run_sweep

TINY = LoadSweep(scales=(256,), localities=(0.5,), loads=(0.2, 0.8), warmup_s=1e-6, measure_s=2e-6)


def test_rows_follow_the_points():
    seen = []
    rows = run_sweep(TINY, progress=lambda done, total, row: seen.append((done, total)))
    assert [(r["network"], r["load"]) for r in rows] == [("opsquare", 0.2), ("opsquare", 0.8),
                                                        ("leafspine", 0.2), ("leafspine", 0.8)]
    assert seen[-1] == (4, 4)
    assert all(r["num_nodes"] == 256 and r["wall_s"] > 0 and r["packets_generated"] > 0 for r in rows)


@pytest.mark.slow
def test_parallel_sweep_equals_serial():
    def strip(rows):  # repr: NaN (no remote packet delivered yet in so short a run) equals itself
        return repr([{k: v for k, v in r.items() if k not in ("wall_s", "cpu_s")} for r in rows])

    assert strip(run_sweep(TINY, jobs=2)) == strip(run_sweep(TINY))


def test_unknown_network():
    with pytest.raises(ConfigError, match="networks = 'torus'"):
        LoadSweep(networks=("torus",))
