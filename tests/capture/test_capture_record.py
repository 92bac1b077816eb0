"""What a capture records: the tables and their columns, FLOPs, groups, files, the graph."""

from __future__ import annotations

import pytest

import ddlsim
from ddlsim.capture import CapturedProgram
from ddlsim.training.graph import OpKind
from tests.capture.programs import BATCH, HIDDEN, IN, LAYERS, fsdp_tp_mlp

DP, TP = 2, 4


@pytest.fixture(scope="module")
def program():
    return ddlsim.capture(fsdp_tp_mlp, (DP, TP), ("dp", "tp"))


def test_tables_have_the_issue_columns(program):
    for column in ("op", "size_bytes", "group_size", "group_stride", "count", "phase", "module"):
        assert column in program.collectives.columns
    for column in ("op", "flop", "read_bytes", "write_bytes", "dtype", "module", "phase"):
        assert column in program.compute.columns
    assert set(program.collectives.op) == {"all_gather", "all_reduce", "reduce_scatter"}
    assert program.num_ranks == DP * TP and program.ranks == (0,)


def test_groups_are_mesh_dimensions(program):
    collectives = program.collectives
    tp = collectives[collectives.op == "all_reduce"]
    dp = collectives[collectives.op != "all_reduce"]
    assert set(zip(tp.group_size, tp.group_stride)) == {(TP, 1)}
    assert set(zip(dp.group_size, dp.group_stride)) == {(DP, TP)}


def test_tensor_parallel_all_reduces_per_layer(program):
    """Forward: one all-reduce after each row-parallel layer; backward: one per column-parallel
    input gradient, except the first layer's (its input needs no gradient)."""
    calls = program.collective_summary(by=("op", "phase", "size_bytes"))
    reduces = calls[calls.op == "all_reduce"].set_index("phase")
    message = BATCH * IN * 4
    assert reduces.loc["forward", "count"] == LAYERS and reduces.loc["forward", "size_bytes"] == message
    assert reduces.loc["backward", "count"] == LAYERS - 1


def test_flop_count_of_the_matrix_multiplies(program):
    """Per layer and rank: forward 2 x batch x (IN x HIDDEN/TP) x 2 matrices; backward twice that
    (weight and input gradients), less the first layer's input gradient."""
    forward = 2 * BATCH * IN * (HIDDEN // TP) * 2
    expected = LAYERS * 3 * forward - forward // 2
    matmuls = program.compute[program.compute.op.isin(["aten.mm", "aten.addmm"])]
    assert matmuls.flop.sum() == expected


def test_save_and_load_keep_everything(program, tmp_path):
    path = program.save(tmp_path / "mlp.parquet")
    loaded = CapturedProgram.load(path)
    assert loaded.mesh_shape == (DP, TP) and loaded.mesh_dim_names == ("dp", "tp")
    assert loaded.collectives.equals(program.collectives)
    first = ddlsim.simulate(program, fabric="superpod")
    second = ddlsim.simulate(path, fabric="superpod")
    assert first.iteration_time_s == second.iteration_time_s > 0


def test_simulation_overlaps_prefetched_all_gathers(program):
    """FSDP2 all-gathers the next layer on its own stream: the graph keeps them off the compute
    stream and the timeline hides part of them behind compute."""
    result = ddlsim.simulate(program, fabric="superpod", device="h100_sxm")
    streams = {op.stream for op in result.graph.ops if op.kind is OpKind.COLLECTIVE}
    assert {"comm:dp", "comm:tp"} <= streams
    iteration = result.iteration
    assert iteration.iteration_time_s >= iteration.compute_time_s
    assert iteration.comm_time_s == pytest.approx(iteration.exposed_comm_time_s + iteration.hidden_comm_time_s)
    assert result.row()["iteration_time_s"] == result.iteration_time_s


def test_algorithms_and_fabrics_change_only_the_network_price(program):
    ideal = ddlsim.simulate(program, fabric="ideal", collective="ring")
    superpod = ddlsim.simulate(program, fabric="superpod", collective="best")
    assert ideal.compute_time_s == superpod.compute_time_s
    assert ideal.comm_time_s != superpod.comm_time_s
