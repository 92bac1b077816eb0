"""`task=train` and `task=hybrid` through the real rooms (workload, compute, network)."""

import math

import pytest

import ddlsim
from ddlsim.core.errors import InfeasibleError

TRAIN = ["experiment=single", "task=train", "collective=best"]


def train_row(*overrides):
    result = ddlsim.run([*TRAIN, *overrides])
    assert len(result.rows) == 1
    return result.rows[0], result.summary


def test_a_run_adds_up():
    row, summary = train_row("fabric=superpod", "model.target_loss=2.2")
    assert row["status"] == "ok" and row["fabric"] == "superpod" and row["model_target_loss"] == 2.2
    assert row["iteration_time_s"] == pytest.approx(row["compute_time_s"] + row["exposed_comm_time_s"])
    assert row["comm_time_s"] == pytest.approx(row["exposed_comm_time_s"])  # no overlap by default
    assert 0 < row["comm_fraction"] < 1
    assert row["time_to_accuracy_s"] == pytest.approx(row["num_steps"] * row["iteration_time_s"])
    assert row["samples_per_s"] == pytest.approx(row["global_batch"] / row["iteration_time_s"])
    assert row["num_ranks"] == row["tp_degree"] * row["dp_degree"]
    assert row["compute_source"] in {"measured", "scaled", "roofline"} and "A100" in row["compute_device"]
    parts = sum(row[key] for key in ("comm_latency_s", "comm_transfer_s", "comm_reduction_s"))
    assert parts == pytest.approx(row["comm_time_s"])
    assert row["comm_dp_gradient_all_reduce_calls"] == 1
    assert row["comm_tp_attention_all_reduce_calls"] == 3 * row["layers"]  # forward, recompute, backward
    assert "superpod" in summary and "time to accuracy" in summary


def test_bucketed_overlap_hides_part_of_the_gradient_all_reduce():
    plain, _ = train_row("fabric=superpod", "model.target_loss=2.2")
    overlapped, _ = train_row("fabric=superpod", "model.target_loss=2.2", "training.overlap=dp_backward")
    assert overlapped["overlap"] == "dp_backward" and overlapped["hidden_comm_time_s"] > 0
    assert overlapped["compute_time_s"] == pytest.approx(plain["compute_time_s"])
    assert overlapped["iteration_time_s"] < plain["iteration_time_s"]


def test_network_energy_and_cost_come_from_the_fabric_model():
    ramp, _ = train_row("fabric=ramp", "model.target_loss=2.5")
    assert ramp["network_power_w"] > 0 and ramp["network_cost_usd"] > 0
    assert ramp["network_energy_j"] == pytest.approx(ramp["network_power_w"] * ramp["iteration_time_s"])
    assert ramp["network_energy_to_accuracy_j"] == pytest.approx(ramp["network_energy_j"] * ramp["num_steps"])
    ideal, _ = train_row("fabric=ideal", "model.target_loss=2.5")
    assert math.isnan(ideal["network_energy_j"]) and math.isnan(ideal["network_cost_usd"])


def test_an_impossible_point_raises_alone_and_is_a_row_in_a_sweep():
    impossible = [*TRAIN, "fabric=ideal", "fabric.num_nodes=4", "model.target_loss=2.5"]
    with pytest.raises(InfeasibleError, match="8 ranks do not fit"):
        ddlsim.run(impossible)
    point = ddlsim.run_point(impossible)
    row = point.rows[0]
    assert row["status"].startswith("infeasible: 8 ranks do not fit") and "iteration_time_s" not in row
    assert row["fabric"] == "ideal" and row["model_target_loss"] == 2.5 and row["overlap"] == "none"
    assert "infeasible" in point.summary
    with pytest.raises(InfeasibleError):
        ddlsim.run_point([*impossible, "task.on_infeasible=error"])


def test_dlrm_iteration_has_its_all_to_alls():
    row, _ = train_row("fabric=superpod", "model=dlrm", "model.global_batch=2097152")
    all_to_alls = [key for key in row if key.startswith("comm_") and "all_to_all" in key and key.endswith("_calls")]
    assert len(all_to_alls) == 2 and math.isnan(row["time_to_accuracy_s"])


def test_hybrid_pattern_gets_faster_with_bandwidth_on_a_fitted_fabric():
    result = ddlsim.run(["experiment=single", "task=hybrid", "fabric=sipac", "task.num_ranks=[64]",
                         "task.cu_bandwidths=[256Gbps,1024Gbps]", "+task.algorithms={sipac: [sipco, sipco]}"])
    slow, fast = result.rows
    assert slow["mp_group"] == 8 and slow["dp_group"] == 8
    assert slow["all_to_all_algorithm"] == "sipco" and slow["all_reduce_algorithm"] == "sipco"
    assert slow["time_s"] == pytest.approx(slow["all_to_all_time_s"] + slow["all_reduce_time_s"])
    assert fast["time_s"] < slow["time_s"]
    torus = ddlsim.run(["experiment=single", "task=hybrid", "fabric=torus2d", "task.num_ranks=[64]",
                        "task.cu_bandwidths=[256Gbps]", "+task.algorithms={torus2d: [ring, ring]}"]).rows[0]
    assert torus["all_to_all_algorithm"] == "ring"


def test_hybrid_takes_the_papers_pairing_from_the_experiment_and_the_collective_group_otherwise():
    config = ddlsim.compose(["experiment=sipac_fig13"])
    assert dict(config.task.algorithms) == {"sipac": ["sipco", "sipco"], "bcube": ["direct", "ring"],
                                            "superpod": ["direct", "ring"], "torus2d": ["ring", "ring"]}
    row = ddlsim.run(["experiment=single", "task=hybrid", "fabric=sipac", "collective=ring", "task.num_ranks=[64]",
                      "task.cu_bandwidths=[256Gbps]"]).rows[0]
    assert row["all_to_all_algorithm"] == "ring" and row["all_reduce_algorithm"] == "ring"
    with pytest.raises(ddlsim.ConfigError, match="algorithms.sipac"):
        ddlsim.run(["experiment=single", "task=hybrid", "fabric=sipac", "+task.algorithms={sipac: [sipco]}"])


def test_a_fabric_can_get_its_own_collective_algorithm():
    per_fabric = "+task.collectives={ramp: {name: best, exclude: [direct]}}"
    row, _ = train_row("fabric=ramp", "model.target_loss=2.2", per_fabric)
    assert row["algorithm"] == "best(exclude=direct)"
    assert all(row[key] != "direct" for key in row if key.startswith("comm_") and key.endswith("_algorithm"))
    other, _ = train_row("fabric=superpod", "model.target_loss=2.2", per_fabric)
    assert other["algorithm"] == "best"
    from ddlsim.core.errors import ConfigError

    with pytest.raises(ConfigError, match="task.collectives.nofabric"):
        ddlsim.build_components([*TRAIN, "+task.collectives={nofabric: {name: ring}}"])
    with pytest.raises(ConfigError, match="exclude"):
        ddlsim.build_components([*TRAIN, "+task.collectives={ramp: {name: best, exclude: [nope]}}"])


def test_a_pipelined_run_reports_its_bubble_apart_from_communication():
    """Finding 8: ``model=gpt parallel.pipeline=3`` showed exposed comm 22.75 ms > total comm 9.53 ms."""
    row, _ = train_row("model=gpt", "parallel.pipeline=3")
    assert row["bubble_time_s"] > 0 and row["exposed_comm_time_s"] <= row["comm_time_s"]
    parts = row["compute_time_s"] + row["exposed_comm_time_s"] + row["bubble_time_s"]
    assert parts == pytest.approx(row["iteration_time_s"])
    assert row["comm_fraction"] == pytest.approx(row["exposed_comm_time_s"] / row["iteration_time_s"])
    single, _ = train_row("model=gpt")
    assert single["bubble_time_s"] == 0


def test_a_target_loss_outside_the_scaling_laws_is_refused():
    """Finding 4: ``model.target_loss=100`` planned one GPU and 2.988 ms to accuracy."""
    from ddlsim.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"model.target_loss = 100.0: must lie in the scaling laws' domain"):
        ddlsim.run([*TRAIN, "model.target_loss=100"])
    with pytest.raises(InfeasibleError, match="tensor-parallel"):
        ddlsim.run([*TRAIN, "model.target_loss=1.0"])
