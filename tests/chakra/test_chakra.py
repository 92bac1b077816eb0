"""Chakra execution traces out and in (issue 25): ddlsim's ETs decode with Chakra's own tools, and
a program exported and imported again prices to the same iteration time on three fabrics."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import ddlsim
from ddlsim.chakra import load_chakra, write_chakra
from ddlsim.errors import ConfigError
from examples.llama_fsdp_tp import build as llama
from examples.moe_expert_parallel import build as moe
from tests.capture.programs import pipeline

chakra = pytest.importorskip("chakra", reason="MLCommons Chakra is not installed (scripts/install.sh dev installs it)")
from chakra.schema.protobuf import et_def_pb2  # noqa: E402

from tests.chakra.et_decode import decode_et  # noqa: E402

FABRICS = ("superpod", "ramp", "torus2d")


@pytest.fixture(scope="module")
def programs() -> dict[str, object]:
    return {"llama_fsdp_tp": ddlsim.capture(llama, mesh_shape=(2, 4), mesh_dim_names=("dp", "tp")),
            "mixtral_ep": ddlsim.capture(moe, mesh_shape=(2, 4), mesh_dim_names=("dp", "ep")),
            "pipeline_1f1b": ddlsim.capture(pipeline("1f1b"), (4,), ("pp",))}


@pytest.mark.parametrize("name", ["llama_fsdp_tp", "mixtral_ep", "pipeline_1f1b"])
def test_export_then_import_prices_the_same_on_three_fabrics(programs, name, tmp_path) -> None:
    program = programs[name]
    files = program.to_chakra(tmp_path)
    assert len(files) == program.num_ranks
    again = load_chakra(str(tmp_path))
    for fabric in FABRICS:
        before = ddlsim.simulate(program, fabric=fabric, device="h100_sxm")
        after = ddlsim.simulate(again, fabric=fabric, device="h100_sxm")
        assert after.iteration_time_s == pytest.approx(before.iteration_time_s, rel=1e-12)
        assert after.exposed_comm_time_s == pytest.approx(before.exposed_comm_time_s, rel=1e-12)


@pytest.mark.parametrize("name", ["llama_fsdp_tp", "pipeline_1f1b"])
def test_exported_files_decode_with_chakras_protolib(programs, name, tmp_path) -> None:
    program = programs[name]
    write_chakra(program, tmp_path)
    for rank in sorted(program.ranks):
        _, nodes = decode_et(tmp_path / f"{program.name}.{rank}.et")
        events = program.rank_events(rank)
        counts = Counter(et_def_pb2.NodeType.Name(node.type) for node in nodes)
        collectives = events[events.kind == "collective"]
        p2p = collectives[collectives.op == "send_recv"]
        assert counts == +Counter({"COMP_NODE": int((events.kind == "compute").sum()),
                                   "COMM_COLL_NODE": len(collectives) - len(p2p),
                                   "COMM_SEND_NODE": int((~p2p.receives).sum()),
                                   "COMM_RECV_NODE": int(p2p.receives.sum())})
        comp = next(node for node in nodes if node.type == et_def_pb2.COMP_NODE and
                    any(a.name == "num_ops" and a.int64_val > 0 for a in node.attr))
        assert {attribute.name for attribute in comp.attr} >= {"num_ops", "tensor_size", "op_type", "is_cpu_op"}
    if name == "pipeline_1f1b":
        assert counts["COMM_SEND_NODE"] > 0 and counts["COMM_RECV_NODE"] > 0


def test_chakras_jsonizer_reads_an_exported_file(programs, tmp_path) -> None:
    program = programs["llama_fsdp_tp"]
    first = write_chakra(program, tmp_path / "et", ranks="captured")[0]
    output = tmp_path / "rank0.json"
    subprocess.run([sys.executable, "-m", "chakra.src.jsonizer.jsonizer", "--input_filename", str(first),
                    "--output_filename", str(output)], check=True, timeout=300)
    text = output.read_text()
    assert text.count('"COMM_COLL_NODE"') == int((program.rank_events(0).kind == "collective").sum())


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """The traces Chakra's own generator writes (``chakra_generator``), for 8 NPUs."""
    directory = tmp_path_factory.mktemp("generated")
    subprocess.run([sys.executable, "-m", "chakra.src.generator.generator", "--num_npus", "8"], cwd=directory,
                   check=True, timeout=300)
    return directory


@pytest.mark.parametrize("trace", ["ALL_REDUCE", "ALL_TO_ALL", "one_metadata_node_all_types",
                                   "two_comp_nodes_dependent", "one_comp_node"])
def test_traces_of_chakras_generator_import_and_price(generated, trace) -> None:
    program = load_chakra(str(generated / f"{trace}.*.et"))
    assert program.num_ranks == 8
    result = ddlsim.simulate(program, fabric="superpod", device="h100_sxm")
    if trace == "one_metadata_node_all_types":  # metadata carries nothing to price
        assert len(program.events) == 0 and result.iteration_time_s == 0
        return
    assert result.iteration_time_s > 0
    if trace == "two_comp_nodes_dependent":  # two 5 us compute nodes, one after the other
        assert result.compute_time_s == pytest.approx(10e-6)
    if trace == "ALL_REDUCE":
        collectives = program.collectives
        assert collectives.op.tolist() == ["all_reduce"] and collectives.size_bytes.tolist() == [65536]


def test_an_unknown_node_type_is_one_line_naming_the_node(generated) -> None:
    with pytest.raises(ConfigError, match=r"node \d+ \('MEM_LOAD_NODE'\) is a MEM_LOAD_NODE, which ddlsim cannot"):
        load_chakra(str(generated / "one_remote_mem_load_node.*.et"))


def test_bad_trace_input_is_one_line(tmp_path, programs) -> None:
    with pytest.raises(ConfigError, match="no Chakra ET files"):
        load_chakra(str(tmp_path / "missing"))
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "x.0.et").write_bytes(b"\xff\xff\xff garbage")
    with pytest.raises(ConfigError, match="is not a Chakra ET"):
        load_chakra(str(tmp_path / "corrupt"))
    files = write_chakra(programs["llama_fsdp_tp"], tmp_path / "gap")
    files[3].unlink()
    with pytest.raises(ConfigError, match=r"ranks must be 0\.\.6"):
        load_chakra(str(tmp_path / "gap"))
    files[7].unlink()
    files[3].parent.joinpath("renamed").mkdir()
    with pytest.raises(ConfigError, match="must be named <name>.<rank>.et"):
        (tmp_path / "gap" / "odd.et").write_bytes(b"")
        load_chakra(str(tmp_path / "gap" / "*.et"))


def test_a_trace_larger_than_the_fabric_is_infeasible(programs, tmp_path) -> None:
    from ddlsim.errors import InfeasibleError

    write_chakra(programs["llama_fsdp_tp"], tmp_path)
    with pytest.raises(InfeasibleError):
        ddlsim.simulate(load_chakra(str(tmp_path)), fabric={"name": "sipac", "r": 2, "levels": 2}, device="h100_sxm")


def test_missing_chakra_says_how_to_install_it(monkeypatch) -> None:
    from ddlsim.chakra import schema

    monkeypatch.setitem(sys.modules, "chakra.schema.protobuf", None)
    with pytest.raises(ConfigError, match="install MLCommons Chakra from its repository"):
        schema.require_chakra()


def _foreign_trace(directory: Path, num_ops: int, ranks: int = 2) -> Path:
    """A hand-written ET in the style of Chakra's converter: a compute node with its work, then an
    all-reduce that depends on it, on every rank."""
    from chakra.src.third_party.utils.protolib import encodeMessage

    directory.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        with (directory / f"foreign.{rank}.et").open("wb") as handle:
            encodeMessage(handle, et_def_pb2.GlobalMetadata(version="0.0.4"))
            compute = et_def_pb2.Node(id=10, name="aten::mm", type=et_def_pb2.COMP_NODE)
            compute.attr.add(name="num_ops", int64_val=num_ops)
            compute.attr.add(name="tensor_size", uint64_val=10**6)
            compute.attr.add(name="op_type", string_val="aten::mm")
            encodeMessage(handle, compute)
            reduce = et_def_pb2.Node(id=11, name="allreduce", type=et_def_pb2.COMM_COLL_NODE, data_deps=[10])
            reduce.attr.add(name="comm_type", int64_val=et_def_pb2.ALL_REDUCE)
            reduce.attr.add(name="comm_size", int64_val=2**20)
            encodeMessage(handle, reduce)
    return directory


def test_foreign_compute_is_priced_from_its_flops_and_bytes(tmp_path) -> None:
    small = load_chakra(str(_foreign_trace(tmp_path / "small", 10**12)))
    large = load_chakra(str(_foreign_trace(tmp_path / "large", 2 * 10**12)))
    assert small.compute.torch_op.tolist() == ["aten::mm"]
    time_small = ddlsim.simulate(small, fabric="superpod", device="h100_sxm").compute_time_s
    time_large = ddlsim.simulate(large, fabric="superpod", device="h100_sxm").compute_time_s
    assert time_small > 10**12 / 989e12  # never faster than the H100's dense BF16 peak
    assert time_large / time_small == pytest.approx(2.0, rel=0.01)
    collectives = small.collectives
    assert collectives.op.tolist() == ["all_reduce"] and collectives.group_size.tolist() == [2]
