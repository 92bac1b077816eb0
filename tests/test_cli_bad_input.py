"""Generated bad input at the front door: every one ends in one line, a non-zero exit, and no result file.

The command line's entry (`ddlsim.cli.main`) runs in this process: a subprocess costs seconds of
imports per call. `main` restores Hydra's global state after each call (public
`Singleton.get_state`/`set_state`); the fixture checks that nothing leaks between calls.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsim.cli import EXIT_INFEASIBLE, EXIT_INVALID, main

SINGLE = ("experiment=single",)
ONE_LINE = re.compile(r"^ddlsim: (error|infeasible): \S.*$")

identifiers = st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True)
positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False).map(lambda value: f"{value:.6g}")

# Each strategy draws the overrides of one bad single run (on top of experiment=single).
unknown_keys = st.builds(lambda group, key: [f"+{group}.{key}_x=1"],
                         st.sampled_from(["fabric", "model", "parallel", "training", "compute", "task", "device",
                                          "collective", "output", "report", "compute.gemm"]), identifiers)
unknown_root = st.builds(lambda key: [f"+{key}_x=1"], identifiers)
bare_numbers = st.builds(lambda option, number: [*option[0], f"{option[1]}={number}"],
                         st.sampled_from([(["fabric=ideal"], "fabric.bandwidth"), (["fabric=ideal"], "fabric.latency"),
                                          (["fabric=superpod"], "fabric.nic_bandwidth"),
                                          (["fabric=ramp"], "fabric.line_rate"), ([], "training.bucket_size"),
                                          ([], "device.memory"), (["fabric=superpod"], "fabric.switch_latency")]),
                         positive)
negative_quantities = st.builds(lambda number, unit: ["fabric=ideal", f"fabric.bandwidth=-{number}{unit}"],
                                positive, st.sampled_from(["Gbps", "GB/s", "Tbps", "bps"]))
unknown_units = st.builds(lambda number, unit: ["fabric=ideal", f"fabric.latency={number}{unit}"],
                          positive, st.sampled_from(["sec", "Gbps", "fortnights", "uS", "m"]))
bad_losses = st.one_of(st.floats(min_value=6.94, max_value=1e6), st.floats(min_value=1e-6, max_value=0.999),
                       st.floats(min_value=-1e6, max_value=-1e-6)).map(lambda loss: [f"model.target_loss={loss!r}"])
bad_options = st.builds(lambda group, name: [f"{group}={name}_nope"],
                        st.sampled_from(["fabric", "model", "collective", "device", "task"]), identifiers)
bad_types = st.builds(lambda key, word: [f"{key}={word}"],
                      st.sampled_from(["model.seq_len", "parallel.max_gpus", "model.target_loss", "seed"]),
                      identifiers)
too_small_fabrics = st.builds(lambda nodes: ["fabric=ideal", f"fabric.num_nodes={nodes}"],
                              st.integers(min_value=1, max_value=7))
# Heads are a power of two, so a tensor-parallel degree of 3, 5, 6, ... never splits them evenly.
uneven_tensor_ranks = st.builds(lambda degree: [f"parallel.tensor={degree}"],
                                st.integers(min_value=3, max_value=63).filter(lambda degree: degree & (degree - 1)))

BAD_RUNS = st.one_of(unknown_keys, unknown_root, bare_numbers, negative_quantities, unknown_units, bad_losses,
                     bad_options, bad_types, too_small_fabrics, uneven_tensor_ranks)


@pytest.fixture
def clean_hydra():
    yield
    assert not GlobalHydra.instance().is_initialized()
    assert not HydraConfig.initialized()


def run_cli(capsys, run_dir, overrides):
    capsys.readouterr()
    status = main([*SINGLE, *overrides, f"hydra.run.dir={run_dir}"])
    captured = capsys.readouterr()
    return status, captured.err.strip().splitlines(), captured.out


COUNTER = itertools.count()


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(overrides=BAD_RUNS)
def test_generated_bad_overrides_end_in_one_line_and_no_result(overrides, tmp_path, capsys, clean_hydra):
    run_dir = tmp_path / f"run{next(COUNTER)}"
    status, lines, out = run_cli(capsys, run_dir, overrides)
    assert status in (EXIT_INVALID, EXIT_INFEASIBLE), (overrides, lines, out[-500:])
    assert len(lines) == 1 and ONE_LINE.match(lines[0]), (overrides, lines)
    assert "Traceback" not in out
    assert not (run_dir / "results.csv").exists() and not (run_dir / "results.parquet").exists()


def test_a_good_run_between_bad_ones_is_untouched(tmp_path, capsys, clean_hydra):
    status, lines, _ = run_cli(capsys, tmp_path / "bad", ["fabric=superpod", "+fabric.nic_bandwith=1Gbps"])
    assert status == EXIT_INVALID and lines == [
        "ddlsim: error: fabric.nic_bandwith: unknown key for SuperPodConfig; did you mean 'nic_bandwidth'?"]
    status, lines, out = run_cli(capsys, tmp_path / "good", ["task=collective", "fabric=superpod_1to1",
                                                            "task.sizes=[1GB]", "task.num_ranks=[16]"])
    assert status == 0 and lines == [] and (tmp_path / "good" / "results.csv").is_file()
