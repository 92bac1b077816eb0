"""Profiling the workload's real Megatron shard on CPU, then simulating with the profile.

The issue's acceptance checks: profiling a small Megatron shard writes a profile file; the
simulation then reports compute_source=measured for it and roofline for a shape never profiled;
measured forward time grows with the local batch.
"""

import pytest

import ddlsim
from ddlsim.compute.identity import local_identity
from ddlsim.compute.profile_file import parse_signature_key, read_rows
from ddlsim.core.types import ComputeSource, Phase
from ddlsim.core.work import ComputeTask

pytest.importorskip("ddlsim.workload.equivalent.megatron_layer")

SHAPE = "d_model=64,heads=2,seq_len=32,tp=1"


def key(batch: int, shape: str = SHAPE) -> str:
    return f"megatron_layer|{shape}|b={batch}|fp16|ckpt"


def profile(tmp_path, *keys, extra=()):
    signatures = "[" + ",".join(f'"{k}"' for k in keys) + "]"
    return ddlsim.run(["task=profile", f"task.signatures={signatures}", f"task.output_dir={tmp_path}",
                       "task.iterations=3", "task.warmup=1", "task.progress=false", *extra])


def test_profile_writes_a_file_and_the_simulation_reads_it(tmp_path, one_thread):
    result = profile(tmp_path, key(2))
    identity = local_identity("cpu")
    files = list(tmp_path.glob("*/megatron-layer.csv"))
    assert [path.parent.name for path in files] == [identity.slug]
    rows = read_rows(files[0])
    assert [row["phase"] for row in rows] == ["forward", "recompute", "backward", "optimizer"]
    assert all(row["device"] == identity.name and float(row["time_s"]) > 0 for row in rows)
    assert {row["status"] for row in result.rows} == {"profiled"}

    components = ddlsim.build_components(["device=cpu", f"device.profile_name='{identity.name}'",
                                          f"compute.profile_dirs=[{tmp_path}]", "compute.shipped_profiles=false"])
    profiled = parse_signature_key(key(2))
    measured = components.compute.estimate(ComputeTask("layer_forward", Phase.FORWARD, profiled, flop=1e6))
    assert measured.source is ComputeSource.MEASURED and measured.device == identity.name
    assert measured.time_s == float(rows[0]["time_s"])
    never = parse_signature_key(key(2, "d_model=4096,heads=32,seq_len=2048,tp=1"))
    unseen = components.compute.estimate(ComputeTask("layer_forward", Phase.FORWARD, never, flop=1e15))
    assert unseen.source is ComputeSource.ROOFLINE


def test_rows_are_replaced_only_when_asked(tmp_path, one_thread):
    profile(tmp_path, key(1))
    path = next(tmp_path.glob("*/megatron-layer.csv"))
    before = path.read_bytes()
    again = profile(tmp_path, key(1))
    assert {row["status"] for row in again.rows} == {"kept"} and path.read_bytes() == before
    forced = profile(tmp_path, key(1), extra=["task.replace=true"])
    assert {row["status"] for row in forced.rows} == {"profiled"}
    assert len(read_rows(path)) == 4


def test_forward_time_grows_with_the_local_batch(tmp_path, one_thread):
    # The minimum over iterations resists other work on a shared machine; 32x the work must show.
    result = profile(tmp_path, key(1), key(32), extra=["task.statistic=min", "task.iterations=5"])
    forward = {row["signature_key"]: row["time_s"] for row in result.rows if row["phase"] == "forward"}
    assert forward[key(32)] > forward[key(1)]


def test_dlrm_shard_profiles_on_cpu_with_its_fbgemm_operators(tmp_path, one_thread):
    pytest.importorskip("ddlsim.workload.equivalent.dlrm_shard")
    dlrm = ("dlrm_shard|bottom_layers=2,dense_in=8,embedding_dim=16,features=4,hidden=32,pooling=2,rows=1000,"
            "shard_dim=16,table_rows=1000,tables=2,top_hidden=32,top_layers=2,world=2|b=8|fp16|nockpt")
    result = profile(tmp_path, dlrm)
    phases = {row["phase"]: row for row in result.rows}
    assert set(phases) == {"forward", "backward", "optimizer"}
    # The embedding lookup is an fbgemm operator, not an aten one: it must count as device work.
    assert phases["forward"]["kernels"] > 5 and phases["forward"]["time_s"] > 0


def test_ddlsim_profile_command_line(monkeypatch):
    from ddlsim.app import profile as profile_command

    seen = []
    monkeypatch.setattr(profile_command, "ddlsim_main", lambda argv: seen.append(list(argv)) or 0)
    monkeypatch.setattr("sys.argv", ["ddlsim-profile", "-m", "model.target_loss=3.0,2.5", "--force"])
    assert profile_command.main() == 0
    assert seen == [["experiment=single", "-m", "model.target_loss=3.0,2.5", "task.replace=true", "task=profile"]]


def test_a_shard_that_does_not_fit_is_refused_with_its_estimate_before_any_work(monkeypatch, tmp_path):
    """Finding 10: the README's example grew to 24 GB on a CPU and was killed."""
    from ddlsim.compute import profiler
    from ddlsim.core.errors import InfeasibleError

    monkeypatch.setattr(profiler, "available_memory_bytes", lambda device: 2 * 10**9)
    with pytest.raises(InfeasibleError) as caught:
        ddlsim.run(["experiment=single", "task=profile", "model=megatron", "model.target_loss=2.5", "device=h100_sxm",
                    f"task.output_dir={tmp_path}"])
    message = str(caught.value)
    assert "|b=311|" in message and "needs about 56.35GB to train" in message and "has 2GB available" in message
    suggested = int(message.rsplit("task.local_batches=[", 1)[1].rstrip("]"))
    assert 1 <= suggested < 311
    assert not list(tmp_path.rglob("*.csv"))


def test_the_memory_estimate_counts_adam_state_and_the_recomputed_activations():
    from ddlsim.compute.equivalent_registry import build_equivalent_shard
    from ddlsim.compute.profiler import ADAM_STATE_COPIES, estimate_training_memory
    from ddlsim.compute.profiling import default_builder

    one, two, three = (estimate_training_memory(parse_signature_key(key(batch)), default_builder, "cpu")
                       for batch in (1, 2, 3))
    params = sum(p.numel() * 4 for p in build_equivalent_shard(parse_signature_key(key(1)), "meta").module.parameters())
    assert one.state_bytes == three.state_bytes == ADAM_STATE_COPIES * params
    # Saved tensors: the weights autograd keeps (fixed) plus activations per sample (linear).
    per_sample = two.activation_bytes - one.activation_bytes
    assert per_sample > 0 and three.activation_bytes - two.activation_bytes == per_sample


def test_profiles_go_to_the_run_directory_and_never_into_the_shipped_ones(tmp_path, one_thread):
    """Finding 10: by default ddlsim-profile wrote into the repository's profiles/."""
    from ddlsim.app.profile import main as profile_main
    from ddlsim.compute.model import SHIPPED_PROFILES
    from ddlsim.core.errors import ConfigError

    signature = f'task.signatures=["{key(1)}"]'
    with pytest.raises(ConfigError, match="task.output_dir = '': is required when the run has no directory"):
        ddlsim.run(["experiment=single", "task=profile", signature])
    with pytest.raises(ConfigError, match="holds the shipped profiles; set task.overwrite=true"):
        ddlsim.build_components(["task=profile", f"task.output_dir={SHIPPED_PROFILES}"])
    assert ddlsim.build_components(["task=profile", f"task.output_dir={SHIPPED_PROFILES}", "task.overwrite=true"])
    shipped = {path: path.stat().st_mtime_ns for path in SHIPPED_PROFILES.rglob("*.csv")}
    assert profile_main([signature, "task.iterations=1", "task.warmup=0", "task.progress=false",
                         f"hydra.run.dir={tmp_path}"]) == 0
    assert [path.name for path in tmp_path.glob("profiles/*/*.csv")] == ["megatron-layer.csv"]
    assert {path: path.stat().st_mtime_ns for path in SHIPPED_PROFILES.rglob("*.csv")} == shipped
