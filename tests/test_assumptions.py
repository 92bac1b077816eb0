"""The `assumptions` group: `faithful` changes nothing, and each paper switch does what it claims."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

import ddlsim
from ddlsim.app.assumptions import apply_assumptions
from ddlsim.app.config_store import group_options
from ddlsim.app.runner import build_components, compose
from ddlsim.core.errors import ConfigError
from ddlsim.network.api import estimate_collective, make_fabric
from ddlsim.workload.ramp_reference import TABLE9

MEGATRON_CE_1_5 = ["experiment=single", "model=megatron", "model.target_loss=1.5", "fabric=ideal",
                   "model.widen_heads=true", "parallel.max_gpus=65536"]


def _row(overrides: list[str]) -> dict:
    (row,) = ddlsim.run(overrides).rows
    assert row["status"] == "ok"
    return row


def test_every_assumption_option_is_listed() -> None:
    assert set(group_options()["assumptions"]) >= {"faithful", "ramp_paper", "sipac_paper", "topoopt_paper",
                                                   "wrht_paper"}


def test_faithful_is_the_default_and_changes_no_group() -> None:
    default = compose(["experiment=single", "fabric=ramp"])
    explicit = compose(["experiment=single", "fabric=ramp", "assumptions=faithful"])
    assert default.assumptions.name == "faithful"
    assert apply_assumptions(explicit) is explicit
    assert OmegaConf.to_container(default) == OmegaConf.to_container(explicit)


def test_faithful_rows_have_no_assumptions_column_and_paper_rows_do() -> None:
    assert "assumptions" not in _row(["experiment=single", "fabric=ideal"])
    row = _row(["experiment=single", "fabric=optical_ring", "assumptions=wrht_paper"])
    assert row["assumptions"] == "wrht_paper"


@pytest.mark.parametrize(("overrides", "rule"), [
    # issue 21: sipac_paper on a RAMP run labelled its rows and changed nothing
    (["experiment=single", "fabric=ramp", "assumptions=sipac_paper"],
     "has no effect on this run: it names none of this run's options (model megatron, fabric ramp, collective best); "
     "it sets fabric sipac; collective_for_fabric sipac, sipac_64, bcube, bcube_64, superpod_sipac, torus2d_sipac"),
    (["experiment=single", "fabric=ideal", "assumptions=wrht_paper"],
     "it names none of this run's options (model megatron, fabric ideal, collective best); "
     "it sets fabric optical_ring"),
    # issue 21: topoopt_paper changed nothing on topoopt_fig11 (the task builds its own fabrics)
    (["experiment=topoopt_fig11", "assumptions=topoopt_paper"], "it names none of this run's options (model "
     "topoopt_dlrm, collective per_op); it sets collective_for_fabric topoopt, topoopt_fat_tree, topoopt_ideal"),
    # the model and parallel overlays of ramp_paper reach no collective task
    (["experiment=single", "task=collective", "fabric=superpod", "collective=ring", "assumptions=ramp_paper"],
     "it changes model, parallel, which task collective does not read")])
def test_an_assumption_set_with_no_effect_on_the_run_is_an_error(overrides, rule) -> None:
    with pytest.raises(ConfigError) as caught:
        build_components(overrides)
    name = overrides[-1].split("=")[1]
    assert str(caught.value) == f"assumptions = {name!r}: has no effect on this run: " + \
        rule.removeprefix("has no effect on this run: ") + "; leave assumptions at faithful"


def test_an_entry_set_to_null_is_a_what_if_not_a_switch_with_no_effect() -> None:
    components = build_components(["experiment=single", "fabric=topoopt", "model=topoopt_dlrm",
                                   "assumptions=topoopt_paper", "assumptions.collective_for_fabric.topoopt=null"])
    assert components.algorithm.name == "best"


def test_a_sweep_whose_every_job_has_no_effect_ends_with_one_line(tmp_path, capsys) -> None:
    from ddlsim.app.cli import EXIT_INVALID, main

    status = main(["-m", "experiment=single", "fabric=ramp,superpod", "assumptions=sipac_paper", "report.plots=false",
                   f"hydra.sweep.dir={tmp_path}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == EXIT_INVALID and len(err) == 1
    assert err[0].startswith(f"ddlsim: error: sweep = '{tmp_path}': every job was invalid, e.g. job 0: "
                             "assumptions = 'sipac_paper': has no effect on this run")


def test_ramp_paper_on_ramp_tables_9_10_offloads_table9_only() -> None:
    """Issue 21: RAMP 7.3's offload reached the DLRM of Table 10, which refused it (no tables, exit 0)."""
    rows = ddlsim.run(["experiment=ramp_tables_9_10", "assumptions=ramp_paper",
                       "task.tables=[table9_architecture,table10_paper_batch]"]).rows
    assert {row["table"] for row in rows} == {"table9_architecture", "table10_paper_batch"}
    assert all(row["status"] == "ok" for row in rows)
    assert {(row["table"], row["activation_offload"]) for row in rows} == {("table9_architecture", True),
                                                                          ("table10_paper_batch", False)}


def test_ramp_paper_counts_two_tp_all_reduces_per_layer() -> None:
    faithful = _row(MEGATRON_CE_1_5)
    paper = _row([*MEGATRON_CE_1_5, "assumptions=ramp_paper"])
    for row, per_layer in ((faithful, 6), (paper, 2)):
        calls = row["comm_tp_attention_all_reduce_calls"] + row["comm_tp_mlp_all_reduce_calls"]
        assert calls == per_layer * row["layers"]
    # RAMP 7.2.1: the attention's backward all-reduce and the MLP's forward one.
    assert paper["comm_tp_attention_all_reduce_calls"] == paper["comm_tp_mlp_all_reduce_calls"] == paper["layers"]


def test_ramp_paper_takes_table9_shape_batch_steps_and_plan() -> None:
    row = _row([*MEGATRON_CE_1_5, "assumptions=ramp_paper"])
    table = next(entry for entry in TABLE9 if entry.loss == 1.5)
    assert (row["d_model"], row["heads"], row["layers"]) == (table.d_model, table.heads, table.layers)
    assert (row["tp_degree"], row["dp_degree"], row["global_batch"]) == (table.mp, table.dp, table.global_batch)
    assert row["local_batch"] == table.global_batch // table.dp == 110
    assert row["num_steps"] == table.steps
    assert row["activation_checkpointing"] and row["shape_source"] == "ramp_table9"
    faithful = _row(MEGATRON_CE_1_5)
    assert faithful["local_batch"] != 110  # ddlsim's memory model picks its own batch


def test_ramp_paper_offloads_activations_for_megatron_only() -> None:
    megatron = build_components([*MEGATRON_CE_1_5, "assumptions=ramp_paper"])
    dlrm = build_components(["experiment=single", "model=dlrm", "fabric=ramp", "assumptions=ramp_paper"])
    assert megatron.parallel.activation_offload and not dlrm.parallel.activation_offload
    assert not build_components(MEGATRON_CE_1_5).parallel.activation_offload


def test_ramp_paper_switches_ramp_to_ideal_switching_and_keeps_the_slot_guard() -> None:
    paper = build_components(["experiment=single", "fabric=ramp", "assumptions=ramp_paper"]).fabric
    faithful = build_components(["experiment=single", "fabric=ramp"]).fabric
    assert (paper.switching, faithful.switching) == ("ideal", "transcoder")
    assert (paper.placement, faithful.placement) == ("fewest_steps", "contention_aware")  # RAMP 7.4
    assert paper.slot_overhead == faithful.slot_overhead == 0.05  # RAMP Sec. 5: 950 B per 20 ns slot
    other = build_components(["experiment=single", "fabric=superpod", "assumptions=ramp_paper"]).fabric
    assert other == build_components(["experiment=single", "fabric=superpod"]).fabric


def test_ideal_switching_removes_subnet_contention_from_rampx() -> None:
    # 128 ranks in the fewest-steps box share one rack's wavelengths: contended under the transcoder.
    contended = estimate_collective("all_reduce", 10**9, 128, make_fabric("ramp", placement="fewest_steps"), "rampx")
    ideal = estimate_collective("all_reduce", 10**9, 128, make_fabric("ramp", switching="ideal",
                                                                       placement="fewest_steps"), "rampx")
    assert ideal.time_s < contended.time_s / 3


def test_ramp_paper_restricts_best_to_the_ring_based_set() -> None:
    algorithm = build_components(["experiment=ramp_fig16", "fabric=superpod", "assumptions=ramp_paper"]).algorithm
    names = {candidate.name for candidate in algorithm.candidates()}
    assert names == {"rampx", "rampx_ring", "ring", "hierarchical", "torus2d", "topoopt_ring"}
    faithful = build_components(["experiment=ramp_fig16", "fabric=superpod"]).algorithm
    assert {"bruck", "rhd"} <= {candidate.name for candidate in faithful.candidates()}


def test_sipac_paper_gives_a_switch_pair_b_over_r_minus_1() -> None:
    paper = build_components(["experiment=single", "fabric=sipac", "assumptions=sipac_paper"]).fabric
    faithful = build_components(["experiment=single", "fabric=sipac"]).fabric
    assert paper.pair_bandwidth_bps == pytest.approx(faithful.link_bandwidth_bps / (faithful.radix - 1))
    assert paper.pair_bandwidth_bps / faithful.pair_bandwidth_bps == pytest.approx(8 / 7)


def test_sipac_paper_uses_each_system_s_stated_strategy() -> None:
    for fabric, name in (("sipac", "sipco"), ("bcube", "per_op"), ("superpod_sipac", "per_op"),
                         ("torus2d_sipac", "ring")):
        components = build_components(["experiment=sipac_fig13", f"fabric={fabric}", "assumptions=sipac_paper"])
        assert components.algorithm.name == name
    assert build_components(["experiment=sipac_fig13", "fabric=sipac"]).algorithm.name == "best"


def test_wrht_paper_lifts_the_optical_budget() -> None:
    paper = build_components(["experiment=single", "fabric=optical_ring", "assumptions=wrht_paper"]).fabric
    faithful = build_components(["experiment=single", "fabric=optical_ring"]).fabric
    assert faithful.spec.optical_constraints and not paper.spec.optical_constraints


def test_an_overlay_key_the_schema_lacks_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="switchng"):
        build_components(["experiment=single", "fabric=ramp", "+assumptions.fabric={ramp: {switchng: ideal}}"])


def test_topoopt_paper_runs_ring_allreduce() -> None:
    overrides = ["experiment=single", "fabric=topoopt", "model=topoopt_dlrm"]
    paper = build_components([*overrides, "assumptions=topoopt_paper"]).algorithm
    assert paper.name == "per_op" and dict(paper.ops)[ddlsim.core.types.CollectiveOp.ALL_REDUCE].name == "topoopt_ring"
    fat_tree = build_components(["experiment=single", "fabric=topoopt_fat_tree", "model=topoopt_dlrm",
                                 "assumptions=topoopt_paper"]).algorithm
    assert dict(fat_tree.ops)[ddlsim.core.types.CollectiveOp.ALL_REDUCE].name == "hierarchical"
    assert build_components(overrides).algorithm.name == "best"
