"""TopoOpt Fig. 16 (`experiment=topoopt_fig16`, `task=topoopt_jobs`): a shared cluster."""

from __future__ import annotations

import pandas as pd
import pytest

from ddlsim.app.sweep.reproduce import reproduce
from ddlsim.network.fabrics.topoopt.shared_cluster import fat_tree_tiers

SYSTEMS = {"topoopt", "topoopt_fat_tree", "topoopt_fat_tree_oversub"}


def test_the_shared_fat_tree_is_the_smallest_k_ary_one():
    assert fat_tree_tiers(432, 4) == [24, 144, 1728]  # k = 12: 6 servers per edge switch, 36 per pod
    assert fat_tree_tiers(128, 4) == [16, 64, 512]  # k = 8, the topoopt_fat_tree option's tiers
    assert fat_tree_tiers(32, 1) == [3, 9, 54]  # k = 6 holds 54 >= 32


def _check(frame: pd.DataFrame, loads: list[int], seeds: int = 1) -> None:
    assert set(frame["fabric"]) == SYSTEMS
    assert sorted(set(frame["num_jobs"])) == loads
    assert len(frame) == 3 * sum(loads) * seeds and frame["seed"].nunique() == seeds
    # The tail over time: one 99th percentile over every iteration of every job of a system and load.
    # Every job has an iteration at least its mean, and fewer than 1 % of the iterations lie above the
    # percentile (at most 100 iterations per job), so it is at least the fastest job's mean.
    for _, point in frame.groupby(["fabric", "num_jobs", "seed"]):
        pooled = point["pooled_iteration_time_p99_s"]
        assert pooled.nunique() == 1 and pooled.iloc[0] >= point["iteration_time_s"].min() * (1 - 1e-12)
    shards = frame[frame["fabric"] == "topoopt"]
    # TopoOpt App. C: each job on its own, completely disjoint shard, so beside the others it takes its alone time.
    alone = shards["alone_iteration_time_s"].to_numpy()
    assert shards["iteration_time_s"].to_numpy() == pytest.approx(alone, rel=1e-9)
    assert (shards["placement"] == "shard").all()
    shared = frame[frame["fabric"] != "topoopt"]
    assert (shared["placement"] == "random").all() and (shared["slowdown"] >= 1 - 1e-9).all()
    # The jobs of one load sit on disjoint servers.
    for _, point in shared.groupby(["fabric", "num_jobs", "seed"]):
        nodes = [node for text in point["nodes"] for run in text.split(",")
                 for node in range(int(run.split("-")[0]), int(run.split("-")[-1]) + 1)]
        assert len(nodes) == len(set(nodes)) == point["num_ranks"].sum()


def test_a_small_shared_cluster_runs_with_its_side_by_side(tmp_path):
    result = reproduce("topoopt_fig16", tmp_path, ["task.num_servers=32", "task.servers_per_job=4",
                                                   "task.num_jobs=2,8", "task.iterations=3", "task.seed=0,1"])
    frame = pd.read_csv(tmp_path / "results.csv")
    _check(frame, [2, 8], seeds=2)
    side = pd.read_csv(tmp_path / "side_by_side.csv").set_index("key")
    assert side.loc["mean_fat_tree_over_topoopt", "paper"] == "1.7x"
    assert "2 placement seeds" in side.loc["mean_fat_tree_over_topoopt", "ddlsim"]
    assert side.loc["tail_fat_tree_over_topoopt_full", "ddlsim"].split(" (")[0].endswith("at 8 jobs")
    assert any(path.name == "fig16.png" for path in result.report.paths)


@pytest.mark.slow
def test_fig16_full_432_servers_5_to_27_jobs(tmp_path):
    reproduce("topoopt_fig16", tmp_path)
    frame = pd.read_csv(tmp_path / "results.csv")
    _check(frame, [5, 10, 15, 20, 27], seeds=3)
    full = frame[(frame["fabric"] == "topoopt") & (frame["num_jobs"] == 27) & (frame["seed"] == 0)]
    mix = full["model"].value_counts()
    assert mix.to_dict() == {"topoopt_dlrm": 11, "topoopt_bert": 8, "topoopt_candle": 5, "topoopt_vgg16": 3}
    assert (frame["load"].max(), frame["load"].min()) == (1.0, 5 * 16 / 432)
