"""Generated bad input at the front door: every one ends in one line, a non-zero exit, and no result file.

The command line's entry (`ddlsim.app.cli.main`) runs in this process: a subprocess costs seconds of
imports per call. `main` restores Hydra's global state after each call (public
`Singleton.get_state`/`set_state`); the fixture checks that nothing leaks between calls.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsim.app.cli import EXIT_BROKEN_PIPE, EXIT_INFEASIBLE, EXIT_INVALID, main

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

BAD_RUN_KINDS = {"unknown_keys": unknown_keys, "unknown_root": unknown_root, "bare_numbers": bare_numbers,
                 "negative_quantities": negative_quantities, "unknown_units": unknown_units, "bad_losses": bad_losses,
                 "bad_options": bad_options, "bad_types": bad_types, "too_small_fabrics": too_small_fabrics,
                 "uneven_tensor_ranks": uneven_tensor_ranks}
BAD_RUNS = st.one_of(*BAD_RUN_KINDS.values())
# Each run composes the Hydra config twice (about 0.7 s of CPU): the default run draws a few runs of
# every kind; the slow run draws 200 from all kinds mixed, as this test did before.
EXAMPLES_PER_KIND = 4


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


def _check_bad_run(overrides, tmp_path, capsys):
    run_dir = tmp_path / f"run{next(COUNTER)}"
    status, lines, out = run_cli(capsys, run_dir, overrides)
    assert status in (EXIT_INVALID, EXIT_INFEASIBLE), (overrides, lines, out[-500:])
    assert len(lines) == 1 and ONE_LINE.match(lines[0]), (overrides, lines)
    assert "Traceback" not in out
    assert not (run_dir / "results.csv").exists() and not (run_dir / "results.parquet").exists()


@pytest.mark.parametrize("kind", sorted(BAD_RUN_KINDS))
def test_generated_bad_overrides_of_each_kind_end_in_one_line_and_no_result(kind, tmp_path, capsys, clean_hydra):
    @settings(max_examples=EXAMPLES_PER_KIND, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(overrides=BAD_RUN_KINDS[kind])
    def check(overrides):
        _check_bad_run(overrides, tmp_path, capsys)

    check()


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(overrides=BAD_RUNS)
def test_generated_bad_overrides_end_in_one_line_and_no_result(overrides, tmp_path, capsys, clean_hydra):
    _check_bad_run(overrides, tmp_path, capsys)


def test_a_good_run_between_bad_ones_is_untouched(tmp_path, capsys, clean_hydra):
    status, lines, _ = run_cli(capsys, tmp_path / "bad", ["fabric=superpod", "+fabric.nic_bandwith=1Gbps"])
    assert status == EXIT_INVALID and lines == [
        "ddlsim: error: fabric.nic_bandwith: unknown key for SuperPodConfig; did you mean 'nic_bandwidth'?"]
    status, lines, out = run_cli(capsys, tmp_path / "good", ["task=collective", "fabric=superpod_1to1",
                                                            "task.sizes=[1GB]", "task.num_ranks=[16]"])
    assert status == 0 and lines == [] and (tmp_path / "good" / "results.csv").is_file()


# Issue 21: each input that gave a traceback, a silent wrong answer or an absurd accepted value, and
# each message that blamed the wrong key, now ends in its one line (after experiment=single).
ONE_LINE_CASES = [
    # tracebacks in the Parquet writer, after results.csv was written
    (["task=collective", "task.sizes=[1e30B]"], EXIT_INVALID,
     "task.sizes = '1e30B': is implausible: a size is at most 1PB (README, 'Values take units')"),
    (["device.memory=1e30GB"], EXIT_INVALID,
     "device.memory = '1e30GB': is implausible: a size is at most 1PB (README, 'Values take units')"),
    # silent wrong answers
    (["task=collective", "task.root=100", "task.num_ranks=[8]", "task.ops=[broadcast]"], EXIT_INVALID,
     "task.root = 100: must be a rank of every group: 0 to 7 (the smallest of num_ranks is 8)"),
    (["task=collective", "task.root=3", "task.num_ranks=[8]"], EXIT_INVALID,
     "task.root = 3: has no effect: no op of ops has a root (broadcast, reduce, gather, scatter, send_recv)"),
    (["task=packet", "fabric=superpod"], EXIT_INVALID,
     "fabric = 'superpod': has no effect: task packet does not read the fabric group (it reads only its own keys); "
     "leave fabric at its default, ideal (as experiment=single does)"),
    (["task=collective", "model=dlrm"], EXIT_INVALID,
     "model = 'dlrm': has no effect: task collective does not read the model group (it reads fabric, collective, "
     "device); leave model at its default, megatron (as experiment=single does)"),
    # absurd values
    (["fabric=ramp", "fabric.propagation=1e30s"], EXIT_INVALID,
     "fabric.propagation = '1e30s': is implausible: a delay is at most 1s (README, 'Values take units')"),
    (["fabric=ideal", "fabric.bandwidth=1e-3bps"], EXIT_INVALID,
     "fabric.bandwidth = '1e-3bps': is implausible: a bandwidth is between 1kbps and 1Pbps (README, 'Values take "
     "units')"),
    (["fabric=superpod", "fabric.nic_bandwidth=1e30Gbps"], EXIT_INVALID,
     "fabric.nic_bandwidth = '1e30Gbps': is implausible: a bandwidth is between 1kbps and 1Pbps (README, 'Values "
     "take units')"),
    (["report.figures=[bogus]"], EXIT_INVALID,
     "report.figures = ['bogus']: must list auto or figure kinds among training, collective, hybrid, time_split"),
    (["report.reference=bogus"], EXIT_INVALID, "report.reference = 'bogus': unknown paper experiment; choose one of "),
    (["model=dlrm", "model.num_gpus=0"], EXIT_INVALID,
     "model.num_gpus = 0: must be >= 1 unless parallel.data or parallel.gpus gives the DLRM's GPU count"),
    # messages that blamed the tensor-parallel degree or the sign
    (["model=hf", "model.config=mixtral_8x7b", "parallel.expert=3"], EXIT_INVALID,
     "parallel.expert = 3: must divide the 8 experts"),
    (["model=hf", "model.config=llama3_70b", "parallel.expert=3"], EXIT_INVALID,
     "parallel.expert = 3: the model is dense (no experts); expert must be 1"),
    (["model=hf", "model.config=llama3_70b", "parallel.context=3"], EXIT_INVALID,
     "parallel.context = 3: must divide the sequence of 8192 tokens into 2 x context equal chunks (Megatron's causal "
     "load balancing gives each rank two)"),
    (["fabric=ramp", "fabric.line_rate=0x10Gbps"], EXIT_INVALID,
     "fabric.line_rate = '0x10Gbps': unknown unit 'x10Gbps' for a bandwidth (example: '400Gbps')"),
]


@pytest.mark.parametrize(("overrides", "status", "message"), ONE_LINE_CASES, ids=lambda value: str(value)[:60])
def test_issue21_inputs_end_in_their_one_line(overrides, status, message, tmp_path, capsys, clean_hydra):
    got, lines, out = run_cli(capsys, tmp_path / "run", overrides)
    kind = "error" if status == EXIT_INVALID else "infeasible"
    assert (got, len(lines)) == (status, 1), (lines, out[-300:])
    assert lines[0].startswith(f"ddlsim: {kind}: {message}"), lines
    assert not (tmp_path / "run" / "results.csv").exists()


@pytest.mark.parametrize(("overrides", "rules"), [
    (["task.gpus=[1000]"], "every plan breaks: data = gpus / (tensor x context x pipeline) must be a whole number "
                           "dividing the global batch of 1024 sequences into micro-batches of micro_batch"),
    (["task.tensor=[3]"], "; tensor must divide the 64 attention heads, the 8 KV heads and every MLP width")])
def test_a_search_with_no_valid_plan_names_the_rule_every_plan_broke(overrides, rules, tmp_path, capsys, clean_hydra):
    status = main(["experiment=search", *overrides, f"hydra.run.dir={tmp_path}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == EXIT_INFEASIBLE and len(lines) == 1 and lines[0].startswith("ddlsim: infeasible: no plan of hf")
    assert lines[0].endswith(rules) and "every plan breaks: " in lines[0]


def _hf_config(tmp_path, **changes) -> str:
    """A local llama config.json: Llama 3 8B's fields (configs/hf_shapes/llama3_8b.yaml) with `changes`."""
    import json

    from ddlsim.workload.transformer.hf_config import load_shipped

    document = {**load_shipped("llama3_8b")["config"], **changes}
    document = {key: value for key, value in document.items() if value is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.parametrize(("changes", "message"), [
    ({"num_attention_heads": 0}, "model.config.num_attention_heads = 0: must be a whole number >= 1"),
    ({"hidden_size": "big"}, "model.config.hidden_size = 'big': must be a whole number >= 1"),
    ({"num_key_value_heads": 0}, "model.config.num_key_value_heads = 0: must be a whole number >= 1"),
    ({"vocab_size": None}, "lacks vocab_size: a llama config must give them (transformers' defaults describe "
                           "another model)")])
def test_a_hugging_face_config_with_a_bad_field_names_it(changes, message, tmp_path, capsys, clean_hydra):
    config = _hf_config(tmp_path, **changes)
    status, lines, _ = run_cli(capsys, tmp_path / "run", ["model=hf", f"model.config={config}"])
    assert status == EXIT_INVALID and len(lines) == 1 and message in lines[0], lines


def test_a_hugging_face_config_of_only_its_family_is_refused(tmp_path, capsys, clean_hydra):
    """It ran on transformers' LlamaConfig defaults (a 6.7 B model) with exit 0."""
    path = tmp_path / "only.json"
    path.write_text('{"model_type": "llama"}')
    status, lines, _ = run_cli(capsys, tmp_path / "run", ["model=hf", f"model.config={path}"])
    assert status == EXIT_INVALID and lines == [
        f"ddlsim: error: model.config = '{path}': lacks hidden_size, intermediate_size, num_hidden_layers, "
        "num_attention_heads, vocab_size, max_position_embeddings: a llama config must give them (transformers' "
        "defaults describe another model)"]


@pytest.mark.skipif(not Path("/proc/1").is_dir(), reason="needs /proc, where no directory can be made")
def test_a_run_directory_that_cannot_be_made_is_one_line(capsys, clean_hydra):
    status, lines, _ = run_cli(capsys, "/proc/1/nope", [])
    assert status == EXIT_INVALID and lines == [
        "ddlsim: error: cannot write /proc/1/nope: No such file or directory; set hydra.run.dir (hydra.sweep.dir for "
        "a sweep) to a writable directory"]


def test_help_into_a_closed_pipe_ends_quietly():
    """`ddlsim --help | head` printed a BrokenPipeError traceback."""
    process = subprocess.Popen([sys.executable, "-m", "ddlsim.app.cli", "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()  # the reader leaves before ddlsim has imported, let alone printed
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_BROKEN_PIPE and err == b""


def test_sm_count_zero_is_the_devices_published_count_not_zero_sms():
    """`compute.kernels.sm_count=0` reads as "the device's published figure" (`KernelModelConfig`), as every
    0 of `compute.kernels` does: the same row as leaving it out, not a device without SMs."""
    import ddlsim

    (default,) = ddlsim.run(["experiment=single"]).rows
    (zero,) = ddlsim.run(["experiment=single", "compute.kernels.sm_count=0"]).rows
    assert zero["iteration_time_s"] == default["iteration_time_s"] and zero["compute_time_s"] > 0
