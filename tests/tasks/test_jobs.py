"""`task=jobs`: several jobs on one fabric, each beside the others and alone (issue 23, item 5)."""

from __future__ import annotations

import pandas as pd
import pytest
from hydra.core.global_hydra import GlobalHydra

import ddlsim
from ddlsim.app.cli import EXIT_INFEASIBLE, EXIT_INVALID, main
from ddlsim.core.errors import ConfigError
from ddlsim.tasks.job_specs import parse_jobs

SINGLE = ["experiment=single", "task=jobs"]
CANDLE_16 = "+task.model_overrides={num_servers: 4, sizes: sec5_6}"  # 4 servers of 4 GPUs


def _rows(*overrides: str) -> pd.DataFrame:
    parts = ddlsim.build_components([*SINGLE, *overrides])
    return pd.DataFrame(parts.task.run(parts).rows).set_index("job_id")


def test_two_identical_jobs_on_a_non_blocking_fabric_take_what_one_takes_alone():
    for model in ("topoopt_candle", "topoopt_dlrm"):  # an all-reduce job, an all-to-all job
        rows = _rows("fabric=topoopt_ideal", f"task.jobs=[{{model: {model}, count: 2}}]", CANDLE_16)
        assert list(rows["nodes"]) == ["0-15", "16-31"] and (rows["placement"] == "packed").all()
        alone = rows["alone_iteration_time_s"].to_numpy()
        assert rows["iteration_time_s"].to_numpy() == pytest.approx(alone, rel=0.01)
        assert rows["slowdown"].to_numpy() == pytest.approx(1.0, rel=0.01)
        # Alone, the job is the train task's iteration on the same fabric (job 0 sits where train puts it).
        train = ddlsim.run(["experiment=single", "fabric=topoopt_ideal", f"model={model}", "model.num_servers=4",
                            "model.sizes=sec5_6"]).rows[0]
        assert rows.loc[0, "alone_iteration_time_s"] == pytest.approx(train["iteration_time_s"], rel=1e-9)


def test_two_overlapping_tp_dp_jobs_on_a_non_blocking_fat_tree_keep_their_alone_time():
    # GPT-2 with TP 2 x DP 4 and DP buckets during backward: collectives of one job overlap each other.
    rows = _rows("fabric=superpod_1to1", "training.overlap=dp_backward",
                 "task.jobs=[{model: gpt2, parallel: {tensor: 2, data: 4, gpus: 8}, count: 2}]")
    assert list(rows["nodes"]) == ["0-7", "8-15"] and (rows["overlap"] == "dp_backward").all()
    assert rows["slowdown"].to_numpy() == pytest.approx(1.0, rel=0.01)


def test_dp_heavy_jobs_slow_down_when_they_share_a_4_to_1_fat_tree_s_uplinks():
    fabric = ["fabric=topoopt_fat_tree_oversub", "fabric.oversubscription=[4.0,1.0]"]
    jobs = ["task.jobs=[{model: topoopt_candle, count: 4}]", "+task.model_overrides={num_servers: 8, sizes: sec5_6}"]
    packed = _rows(*fabric, *jobs)
    spread = _rows(*fabric, *jobs, "task.placement=spread")
    isolated = _rows(*fabric, *jobs, "task.placement=spread", "network.contention=off")
    # Packed, each job owns its two ToRs: nothing is shared.
    assert packed["slowdown"].to_numpy() == pytest.approx(1.0, rel=1e-9)
    # Spread, every ToR holds a server of each of the 4 jobs, whose uplinks carry a quarter of its NICs.
    assert spread["nodes"].str.count(",").min() >= 7  # 8 servers each, in 8 pods
    assert (spread["slowdown"] > 1.2).all()
    assert (spread["slowdown"] == spread["iteration_time_s"] / spread["alone_iteration_time_s"]).all()
    assert (spread["iteration_time_p99_s"] >= spread["iteration_time_s"] * (1 - 1e-12)).all()
    assert isolated["slowdown"].to_numpy() == pytest.approx(1.0, rel=1e-9)
    assert (isolated["contention"] == "off").all() and (spread["contention"] == "on").all()
    assert (isolated["alone_iteration_time_s"] == spread["alone_iteration_time_s"]).all()


def test_jobs_that_arrive_at_random_offsets_still_share_the_uplinks_in_steady_state():
    fabric = ["fabric=topoopt_fat_tree_oversub", "fabric.oversubscription=[4.0,1.0]", "task.placement=spread"]
    jobs = ["task.jobs=[{model: topoopt_candle, count: 4}]", "+task.model_overrides={num_servers: 8, sizes: sec5_6}"]
    together = _rows(*fabric, *jobs)
    arriving = _rows(*fabric, *jobs, "task.arrival=random", "task.seed=1")
    assert (together["arrival"] == "together").all() and (together["start_offset_s"] == 0).all()
    assert (arriving["arrival"] == "random").all()
    offsets = arriving["start_offset_s"]
    assert offsets.nunique() == 4 and (offsets >= 0).all()
    assert (offsets < arriving["alone_iteration_time_s"]).all()
    assert (arriving["alone_iteration_time_s"] == together["alone_iteration_time_s"]).all()
    # Out of phase the jobs still load the same uplinks (each keeps iterating until all are done).
    assert (arriving["slowdown"] > 1.05).all()
    assert arriving.equals(_rows(*fabric, *jobs, "task.arrival=random", "task.seed=1"))


def test_random_placement_is_seeded_and_disjoint():
    base = ["fabric=topoopt_fat_tree_oversub", "task.jobs=[{model: topoopt_dlrm, count: 3}]", CANDLE_16,
            "task.placement=random", "task.iterations=2"]
    first, again, other = _rows(*base), _rows(*base), _rows(*base, "task.seed=1")
    assert list(first["nodes"]) == list(again["nodes"]) and list(first["nodes"]) != list(other["nodes"])
    assert list(first["iteration_time_s"]) == list(again["iteration_time_s"])


def test_a_mix_gives_each_model_its_largest_remainder_share():
    mix = {"topoopt_dlrm": 0.4, "topoopt_bert": 0.3, "topoopt_candle": 0.2, "topoopt_vgg16": 0.1}
    for num_jobs, expected in ((27, [11, 8, 5, 3]), (5, [2, 2, 1, 0]), (10, [4, 3, 2, 1])):
        labels = [spec.label for spec in parse_jobs([], mix, num_jobs, {})]
        assert [labels.count(name) for name in mix] == expected and len(labels) == num_jobs


def test_jobs_name_their_own_nodes_and_a_captured_or_analytic_model_mapping():
    rows = _rows("fabric=topoopt_ideal", "task.jobs=[{model: topoopt_candle, nodes: [4,5,6,7,8,9,10,11,12,13,14,15,"
                                         "16,17,18,19]}, topoopt_bert]", CANDLE_16)
    assert list(rows["nodes"]) == ["4-19", "0-3,20-31"]  # the explicit job first, the packed one around it


def run_cli(capsys, tmp_path, overrides):
    capsys.readouterr()
    status = main([*SINGLE, *overrides, f"hydra.run.dir={tmp_path}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert not GlobalHydra.instance().is_initialized()
    assert not (tmp_path / "results.csv").exists()
    return status, lines


@pytest.mark.parametrize(("overrides", "status", "start"), [
    (["fabric=topoopt_ideal", "task.jobs=[{model: topoopt_candle, count: 2}]",
      "+task.model_overrides={num_servers: 96}"],
     EXIT_INFEASIBLE, "ddlsim: infeasible: task.jobs[1] (384 ranks, 96 slots of 4 nodes) does not fit"),
    (["fabric=topoopt_ideal", "task.jobs=[{model: topoopt_candle, nodes: [0,1,2,3]}, {model: topoopt_bert, "
      "nodes: [3,4,5,6]}]", "+task.model_overrides={num_servers: 1}"],
     EXIT_INVALID, "ddlsim: error: task.jobs[1].nodes = 3: overlaps an earlier job's placement"),
    (["task.placement=round_robin", "task.jobs=[topoopt_candle]"],
     EXIT_INVALID, "ddlsim: error: task.placement = 'round_robin': unknown placement policy; choose one of packed"),
    (["task.jobs=[{model: topoopt_candel}]"], EXIT_INVALID, "ddlsim: error: task.jobs[0].model = 'topoopt_candel'"),
    (["task.jobs=[{model: topoopt_candle, cout: 2}]"], EXIT_INVALID, "ddlsim: error: task.jobs[0].cout = 2"),
    (["task.arrival=staggered", "task.jobs=[topoopt_candle]"],
     EXIT_INVALID, "ddlsim: error: task.arrival = 'staggered': must be one of together, random"),
], ids=["too_big", "overlap", "policy", "model", "key", "arrival"])
def test_bad_jobs_input_ends_in_one_line_naming_the_key(overrides, status, start, tmp_path, capsys):
    got, lines = run_cli(capsys, tmp_path, overrides)
    assert got == status and len(lines) == 1, lines
    assert lines[0].startswith(start), lines


def test_without_a_list_or_a_mix_the_jobs_are_copies_of_the_model_group_s_model():
    rows = _rows("fabric=topoopt_ideal", "model=topoopt_candle", "model.num_servers=4", "task.num_jobs=3")
    assert list(rows["model"]) == ["topoopt_candle"] * 3 and list(rows["nodes"]) == ["0-15", "16-31", "32-47"]
    with pytest.raises(ConfigError, match=r"task\.jobs"):
        ddlsim.build_components([*SINGLE, "task.jobs=[topoopt_bert]", "+task.mix={topoopt_bert: 1}"])


def test_captured_programs_run_as_jobs_and_alone_match_the_train_task():
    program = ("{name: program, entry: 'examples.ddp_cnn:build', mesh_shape: [8], mesh_dim_names: [dp]}")
    rows = _rows("fabric=superpod_1to1", f"task.jobs=[{{model: {program}, count: 2}}]")
    assert list(rows["nodes"]) == ["0-7", "8-15"]
    train = ddlsim.run(["experiment=single", "fabric=superpod_1to1", "model=program",
                        "model.entry=examples.ddp_cnn:build", "model.mesh_shape=[8]", "model.mesh_dim_names=[dp]"])
    assert rows["alone_iteration_time_s"].to_numpy() == pytest.approx(train.rows[0]["iteration_time_s"], rel=1e-9)
    assert rows["slowdown"].to_numpy() == pytest.approx(1.0, rel=0.01)  # a non-blocking fat-tree
