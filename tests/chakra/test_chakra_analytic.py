"""An analytic workload out to Chakra ETs and back (issues 25 and 30): a Megatron-style GPT with PP 4,
TP 2 and DP 2 exported with ``training.chakra=true`` prices to the analytic run's iteration time on
three fabrics after the import, and its files follow Chakra's and ASTRA-sim's conventions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import ddlsim
from ddlsim.chakra import load_chakra, write_workload_chakra
from ddlsim.chakra.analytic_load import AnalyticTrace
from ddlsim.chakra.schema import ET
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import CollectiveOp
from ddlsim.training.graph import OpKind
from ddlsim.training.pricing import Pricer
from ddlsim.training.run import compute_timer, network_timer, reduction_model
from ddlsim.training.settings import run_settings
from ddlsim.training.simulate import build_graph
from tests.chakra.et_decode import attrs as _attrs
from tests.chakra.et_decode import decode_et, write_et

FABRICS = ("superpod", "ramp", "torus2d")
GPT_PP4 = ["experiment=single", "model=gpt", "model.layers=8", "model.d_model=512", "model.heads=8",
           "model.seq_len=256", "model.global_batch=16", "parallel.tensor=2", "parallel.data=2", "parallel.pipeline=4",
           "device=h100_sxm"]
RANKS, STAGE_RANKS = 16, 4


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """The GPT's ETs as ``training.chakra=true`` writes them (on superpod: the fabric does not matter)."""
    output = tmp_path_factory.mktemp("gpt_pp4")
    row = ddlsim.run([*GPT_PP4, "fabric=superpod", "training.chakra=true"], output_dir=output).rows[0]
    assert row["status"] == "ok" and row["pp_degree"] == 4 and row["micro_batches"] == 8
    return Path(row["chakra_dir"])


@pytest.fixture(scope="module")
def graph():
    """The GPT's iteration graph, as the analytic run builds it."""
    components = ddlsim.build_components([*GPT_PP4, "fabric=superpod"])
    workload = components.model.build_workload(components.parallel, components.device.memory_bytes)
    pricer = Pricer(network_timer(components.fabric, components.algorithm, reduction_model(components.device)),
                    compute_timer(components.compute))
    return workload, build_graph(workload, pricer, run_settings(components.config))


@pytest.mark.parametrize("fabric", FABRICS)
def test_export_then_import_prices_as_the_analytic_run(exported, fabric) -> None:
    analytic = ddlsim.run([*GPT_PP4, f"fabric={fabric}"]).rows[0]
    imported = ddlsim.run(["experiment=single", "model=chakra", f"model.trace={exported}", "device=h100_sxm",
                           f"fabric={fabric}"]).rows[0]
    by_api = ddlsim.simulate(load_chakra(str(exported)), fabric=fabric, device="h100_sxm")
    assert imported["status"] == "ok"
    for column in ("iteration_time_s", "compute_time_s", "exposed_comm_time_s", "bubble_time_s", "comm_time_s",
                   "comm_dp_gradient_all_reduce_time_s", "comm_embedding_all_reduce_time_s", "tokens_per_s", "mfu"):
        assert imported[column] == pytest.approx(analytic[column], rel=1e-9), column
    assert by_api.iteration_time_s == pytest.approx(analytic["iteration_time_s"], rel=1e-9)
    assert imported["num_ranks"] == RANKS and imported["pp_degree"] == 4 and imported["workload"] == "gpt"


def test_collectives_are_priced_again_and_compute_is_kept(exported) -> None:
    trace = load_chakra(str(exported))
    assert isinstance(trace, AnalyticTrace) and trace.num_ranks == RANKS
    on_ramp = ddlsim.simulate(trace, fabric="ramp", device="h100_sxm")
    on_torus = ddlsim.simulate(trace, fabric="torus2d", device="h100_sxm")
    assert on_torus.comm_time_s > 1.5 * on_ramp.comm_time_s  # each fabric prices the collectives its own way
    assert on_torus.compute_time_s == on_ramp.compute_time_s
    # Compute keeps the time it was exported with (H100), whichever device the import names.
    on_a100 = ddlsim.simulate(trace, fabric="ramp", device="a100_80gb")
    assert on_a100.compute_time_s == on_ramp.compute_time_s
    analytic_a100 = ddlsim.run([*GPT_PP4[:-1], "device=a100_80gb", "fabric=ramp"]).rows[0]
    assert analytic_a100["compute_time_s"] > 1.5 * on_ramp.compute_time_s


def test_files_decode_with_chakras_protolib_with_the_graphs_node_counts(exported, graph) -> None:
    _, iteration = graph
    ops = iteration.ops
    files = sorted(exported.glob("*.et"), key=lambda path: int(path.suffixes[0][1:]))
    assert [path.name for path in files] == [f"gpt.{rank}.et" for rank in range(RANKS)]
    groups = {name: tuple(ranks) for name, ranks in json.loads((exported / "comm_group.json").read_text()).items()}
    sends, receives = Counter(), Counter()
    is_send = [op.kind is OpKind.COLLECTIVE and op.task.op is CollectiveOp.SEND_RECV for op in ops]
    for rank, path in enumerate(files):
        header, nodes = decode_et(path)
        stage = rank // STAGE_RANKS
        assert _attrs(header)["ddlsim.stage"] == stage
        mine = [op for op in ops if op.stage == stage]
        expected = Counter({
            "COMP_NODE": sum(op.executions for op in mine if op.kind is OpKind.COMPUTE),
            "COMM_COLL_NODE": sum(op.executions for op in mine
                                  if op.kind is OpKind.COLLECTIVE and not is_send[op.index]),
            "COMM_SEND_NODE": sum(op.executions for op in mine if is_send[op.index]),
            "COMM_RECV_NODE": sum(ops[dep].executions for op in mine for dep in op.deps
                                  if is_send[dep] and ops[dep].stage != stage)})
        assert Counter(ET.NodeType.Name(node.type) for node in nodes) == +expected
        assert expected["COMM_SEND_NODE"] == (8 if stage in (0, 3) else 16)  # 8 micro-batches, 1 or 2 directions
        ids = {node.id for node in nodes}
        for node in nodes:
            attrs = _attrs(node)
            assert set(node.data_deps) | set(node.ctrl_deps) <= ids and all(dep < node.id for dep in node.data_deps)
            if "ddlsim.op" in attrs:  # the first node of each op: Chakra's fields say what the op says
                op = ops[json.loads(attrs["ddlsim.op"])["index"]]
                assert op.stage == stage and node.name == op.label and rank % STAGE_RANKS == 0
            if node.type == ET.COMP_NODE:  # work ASTRA-sim's roofline can price, and the analytic time
                op = next(item for item in mine if node.name.partition("#")[0] == item.label)
                assert (attrs["tensor_size"], attrs["op_type"], node.duration_micros) == (
                    round(op.task.memory_bytes), op.task.name, round(op.estimate.time_s * 1e6))
                assert attrs["num_ops"] == round(op.task.flop) if op.task.flop >= 1 else attrs["num_ops"] >= 1
            elif node.type == ET.COMM_COLL_NODE:
                assert int(attrs["pg_name"]) >= 1  # ASTRA-sim reads group 0 as every rank
                group = groups[attrs["pg_name"]]
                op = next(item for item in mine if node.name.partition("#")[0] == item.label)
                per_rank = op.task.op in (CollectiveOp.ALL_GATHER, CollectiveOp.GATHER)  # Chakra's convention
                assert attrs["comm_size"] == op.task.size_bytes // (op.task.group.size if per_rank else 1)
                assert rank in group and len(group) == op.task.group.size
                if "tp_" in node.name:  # TP fastest: consecutive pairs
                    assert group == (rank - rank % 2, rank - rank % 2 + 1)
                if node.name.startswith("gradient_all_reduce"):  # DP: stride TP inside the stage
                    assert group == tuple(sorted({rank, rank ^ 2}))
                if node.name.startswith("embedding_all_reduce"):  # tied embedding: first and last stage
                    assert group == (rank % STAGE_RANKS, rank % STAGE_RANKS + 12)
                if node.name.startswith("optimizer_sync"):  # every stage
                    assert group == tuple(rank % STAGE_RANKS + stage * STAGE_RANKS for stage in range(4))
            elif node.type == ET.COMM_SEND_NODE:
                assert abs(attrs["comm_dst"] - rank) == STAGE_RANKS
                sends[(rank, attrs["comm_dst"], attrs["comm_tag"])] += 1
            elif node.type == ET.COMM_RECV_NODE:
                receives[(attrs["comm_src"], rank, attrs["comm_tag"])] += 1
    assert sends == receives and sum(sends.values()) == 192  # every send has its receive: 2 x 3 x 8 per position


def test_the_python_export_matches_the_command_lines(exported, graph, tmp_path) -> None:
    workload, iteration = graph
    files = write_workload_chakra(workload, iteration, tmp_path / "all")
    assert [path.read_bytes() for path in files] == [(exported / path.name).read_bytes() for path in files]
    firsts = write_workload_chakra(workload, iteration, tmp_path / "stages", ranks="stages")
    assert [path.name for path in firsts] == ["gpt.0.et", "gpt.4.et", "gpt.8.et", "gpt.12.et"]
    again = load_chakra(str(exported))
    assert [path.read_bytes() for path in again.to_chakra(tmp_path / "again")] == [path.read_bytes() for path in files]


def test_an_imported_analytic_trace_writes_its_timeline_and_its_ets_again(exported, tmp_path) -> None:
    row = ddlsim.run(["experiment=single", "model=chakra", f"model.trace={exported}", "device=h100_sxm",
                      "fabric=ramp", "training.trace=true", "training.chakra=true"], output_dir=tmp_path).rows[0]
    events = json.loads(Path(row["trace_file"]).read_text())
    assert events["otherData"]["num_ops"] == 454
    assert events["otherData"]["iteration_time_s"] == pytest.approx(row["iteration_time_s"], rel=1e-12)
    written = sorted(Path(row["chakra_dir"]).iterdir())
    assert [path.read_bytes() for path in written] == [(exported / path.name).read_bytes() for path in written]
    assert len(written) == RANKS + 1  # and comm_group.json


def test_overlapped_buckets_round_trip_too(tmp_path) -> None:
    """dp_backward puts the gradient all-reduce in buckets on their own streams, contended on the fabric."""
    overlap = [*GPT_PP4, "fabric=ramp", "training.overlap=dp_backward", "training.bucket_size=4MiB"]
    row = ddlsim.run([*overlap, "training.chakra=true"], output_dir=tmp_path).rows[0]
    trace = f"model.trace={row['chakra_dir']}"
    imported = ddlsim.run(["experiment=single", "model=chakra", trace, "device=h100_sxm", "fabric=ramp"]).rows[0]
    assert imported["overlap"] == "dp_backward"
    assert imported["iteration_time_s"] == pytest.approx(row["iteration_time_s"], rel=1e-9)


def _rewrite(path: Path, keep) -> None:
    header, nodes = decode_et(path)
    write_et(path, header, [node for node in nodes if keep(node)])


def test_bad_analytic_traces_are_one_line(exported, tmp_path, graph) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    original = (copy / "gpt.4.et").read_bytes()
    _rewrite(copy / "gpt.4.et", lambda node: node.id != 1)  # the first rank of stage 1 loses its first gather
    with pytest.raises(ConfigError, match=r"gpt\.4\.et': node 2 \('.*'\) depends on node 1, which the file does"):
        load_chakra(str(copy))
    (copy / "gpt.4.et").write_bytes(original)

    def without_op_record(node) -> bool:
        if node.id == 1:
            kept = [attribute for attribute in node.attr if attribute.name != "ddlsim.op"]
            del node.attr[:]
            node.attr.extend(kept)
        return True

    _rewrite(copy / "gpt.4.et", without_op_record)  # the node stays, the op's record is gone
    with pytest.raises(ConfigError, match=r"misses op \d+ of the 454 ops of the analytic graph") as error:
        load_chakra(str(copy))
    assert "\n" not in str(error.value)
    for first, second in [("gpt.1.et", "gpt.8.et"), ("gpt.8.et", "gpt.1.et")]:  # two ranks of two stages swapped
        (copy / first).rename(copy / "swap")
        (copy / second).rename(copy / first)
        (copy / "swap").rename(copy / second)
        if first == "gpt.1.et":
            with pytest.raises(ConfigError, match=r"gpt\.1\.et': is not rank 1 of the export gpt\.0\.et belongs to"):
                load_chakra(str(copy))
    (copy / "gpt.15.et").unlink()
    with pytest.raises(ConfigError, match="holds 15 rank files but the workload ran on 16 ranks"):
        load_chakra(str(copy))
    with pytest.raises(ConfigError, match="model.trace"):
        ddlsim.run(["model=chakra", f"model.trace={copy}", "device=h100_sxm", "fabric=ramp"])
    with pytest.raises(InfeasibleError, match="the trace has 16 ranks but fabric 'sipac' has"):
        ddlsim.simulate(load_chakra(str(exported)), fabric={"name": "sipac", "r": 2, "levels": 2}, device="h100_sxm")
    with pytest.raises(ConfigError, match="parallel.tensor"):
        ddlsim.run(["model=chakra", f"model.trace={exported}", "parallel.tensor=2", "fabric=ramp"])
    workload, iteration = graph
    with pytest.raises(ConfigError, match="ranks"):
        write_workload_chakra(workload, iteration, tmp_path / "x", ranks="some")


@pytest.mark.parametrize("p2p", ["false", "true"])
def test_interleaved_pipeline_sends_and_receives_pair_up(tmp_path, p2p) -> None:
    """Virtual stages: sends wrap from the last stage to the first, and batched exchanges are waited
    for as a whole; every send still has exactly one receive, and the round trip is exact."""
    overlap = [*GPT_PP4, "parallel.virtual_stages=2", f"training.overlap_p2p_comm={p2p}", "fabric=superpod"]
    row = ddlsim.run([*overlap, "training.chakra=true"], output_dir=tmp_path).rows[0]
    sends, receives = Counter(), Counter()
    for rank in range(RANKS):
        _, nodes = decode_et(Path(row["chakra_dir"]) / f"gpt.{rank}.et")
        for node in nodes:
            attrs = _attrs(node)
            if node.type == ET.COMM_SEND_NODE:
                sends[(rank, attrs["comm_dst"], attrs["comm_tag"])] += 1
            elif node.type == ET.COMM_RECV_NODE:
                receives[(attrs["comm_src"], rank, attrs["comm_tag"])] += 1
    assert sends == receives and len(sends) == sum(sends.values()) == 448
    assert any(src >= 12 and dst < 4 for src, dst, _ in sends)  # the last stage hands chunk 3 to stage 0
    trace = f"model.trace={row['chakra_dir']}"
    imported = ddlsim.run(["experiment=single", "model=chakra", trace, "device=h100_sxm", "fabric=superpod"]).rows[0]
    assert imported["iteration_time_s"] == pytest.approx(row["iteration_time_s"], rel=1e-9)
