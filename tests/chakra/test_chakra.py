"""Chakra execution traces out and in (issues 25 and 30): a program exported and imported again prices
to the same iteration time on three fabrics; exports follow ASTRA-sim's conventions (numeric groups
from 1 with comm_group.json, each rank's own groups and peers, per-rank ALL_GATHER sizes, work on
every compute node); foreign traces keep their process groups; broken graphs are one-line errors."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

import ddlsim
from ddlsim.chakra import load_chakra, write_chakra
from ddlsim.chakra.schema import ET
from ddlsim.core.errors import ConfigError, InfeasibleError
from examples.llama_fsdp_tp import build as llama
from examples.moe_expert_parallel import build as moe
from tests.capture.programs import pipeline
from tests.chakra.et_decode import attrs, decode_et, write_et

FABRICS = ("superpod", "ramp", "torus2d")
ASTRA_MICROBENCH = Path(__file__).resolve().parents[3] / "shared" / "validation" / "astra_microbench"


@pytest.fixture(scope="module")
def programs() -> dict[str, object]:
    return {"llama_fsdp_tp": ddlsim.capture(llama, mesh_shape=(2, 4), mesh_dim_names=("dp", "tp")),
            "mixtral_ep": ddlsim.capture(moe, mesh_shape=(2, 4), mesh_dim_names=("dp", "ep")),
            "pipeline_1f1b": ddlsim.capture(pipeline("1f1b"), (4,), ("pp",))}


@pytest.fixture(scope="module")
def llama_files(programs, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("llama")
    write_chakra(programs["llama_fsdp_tp"], directory)
    return directory


@pytest.mark.parametrize("name", ["llama_fsdp_tp", "mixtral_ep", "pipeline_1f1b"])
def test_export_then_import_prices_the_same_on_three_fabrics(programs, name, tmp_path) -> None:
    program = programs[name]
    files = write_chakra(program, tmp_path)
    assert len(files) == program.num_ranks
    again = load_chakra(str(tmp_path))
    for fabric in FABRICS:
        before = ddlsim.simulate(program, fabric=fabric, device="h100_sxm")
        after = ddlsim.simulate(again, fabric=fabric, device="h100_sxm")
        assert after.iteration_time_s == pytest.approx(before.iteration_time_s, rel=1e-12)
        assert after.exposed_comm_time_s == pytest.approx(before.exposed_comm_time_s, rel=1e-12)


@pytest.mark.parametrize("name", ["llama_fsdp_tp", "pipeline_1f1b"])
def test_exported_files_hold_a_node_per_record(programs, name, tmp_path) -> None:
    program = programs[name]
    write_chakra(program, tmp_path)
    for rank in sorted(program.ranks):
        _, nodes = decode_et(tmp_path / f"{program.name}.{rank}.et")
        events = program.rank_events(rank)
        counts = Counter(ET.NodeType.Name(node.type) for node in nodes)
        collectives = events[events.kind == "collective"]
        p2p = collectives[collectives.op == "send_recv"]
        assert counts == +Counter({"COMP_NODE": int((events.kind == "compute").sum()),
                                   "COMM_COLL_NODE": len(collectives) - len(p2p),
                                   "COMM_SEND_NODE": int((~p2p.receives).sum()),
                                   "COMM_RECV_NODE": int(p2p.receives.sum())})
    if name == "pipeline_1f1b":
        assert counts["COMM_SEND_NODE"] > 0 and counts["COMM_RECV_NODE"] > 0


def test_every_rank_file_names_its_own_groups_by_number(programs, llama_files) -> None:
    """dp x tp = 2 x 4: rank r's TP group is its row of 4, its DP group the pair {r, r ^ 4}; ids from 1."""
    program = programs["llama_fsdp_tp"]
    entries = json.loads((llama_files / "comm_group.json").read_text()).items()
    table = {int(name): tuple(ranks) for name, ranks in entries}
    assert min(table) == 1 and sorted(table) == list(range(1, len(table) + 1))
    tp_groups, dp_groups = set(), set()
    for rank in range(program.num_ranks):
        _, nodes = decode_et(llama_files / f"{program.name}.{rank}.et")
        for node in nodes:
            if node.type != ET.COMM_COLL_NODE:
                continue
            group = table[int(attrs(node)["pg_name"])]
            record = json.loads(attrs(node)["ddlsim.record"])
            assert rank in group and len(group) == record["group_size"]
            if record["group_size"] == 4:
                assert group == tuple(range(rank - rank % 4, rank - rank % 4 + 4))
                tp_groups.add(group)
            else:
                assert group == tuple(sorted({rank, rank ^ 4}))
                dp_groups.add(group)
    assert len(tp_groups) == 2 and len(dp_groups) == 4  # 8 ranks: two TP rows, four DP pairs


def test_all_gather_sizes_are_per_rank_and_compute_nodes_carry_work(programs, llama_files) -> None:
    program = programs["llama_fsdp_tp"]
    gathers = 0
    for rank in range(program.num_ranks):
        _, nodes = decode_et(llama_files / f"{program.name}.{rank}.et")
        for node in nodes:
            record = json.loads(attrs(node)["ddlsim.record"])
            if node.type == ET.COMP_NODE:
                assert attrs(node).get("num_ops", 0) > 0 or node.duration_micros > 0, node.name
            elif node.type == ET.COMM_COLL_NODE and record["op"] == "all_gather":
                assert attrs(node)["comm_size"] * record["group_size"] == record["size_bytes"]
                gathers += 1
    assert gathers > 0


def test_compute_nodes_carry_ddlsims_durations_when_given_a_compute_model(programs, tmp_path) -> None:
    """For ASTRA-sim's replay (roofline off): each op's time as ddlsim prices it, in whole microseconds."""
    from ddlsim.compute.options import build_compute
    from ddlsim.core.registry import build

    program = programs["llama_fsdp_tp"]
    compute = build_compute(None, build("device", "a100_80gb"))
    write_chakra(program, tmp_path, compute=compute)
    _, nodes = decode_et(tmp_path / f"{program.name}.0.et")
    durations = [node.duration_micros for node in nodes if node.type == ET.COMP_NODE]
    priced_us = ddlsim.simulate(program, fabric="ideal", device="a100_80gb").compute_time_s * 1e6
    assert sum(duration > 0 for duration in durations) > 0
    assert abs(sum(durations) - priced_us) <= 0.5 * len(durations)  # rounding to whole microseconds, per op


def test_pipeline_sends_go_to_the_ranks_own_peer_and_pair_with_receives(programs, tmp_path) -> None:
    program = programs["pipeline_1f1b"]
    write_chakra(program, tmp_path)
    sends, receives = Counter(), Counter()
    for rank in range(program.num_ranks):
        _, nodes = decode_et(tmp_path / f"{program.name}.{rank}.et")
        for node in nodes:
            if node.type == ET.COMM_SEND_NODE:
                assert abs(attrs(node)["comm_dst"] - rank) == 1
                sends[(rank, attrs(node)["comm_dst"], attrs(node)["comm_tag"])] += 1
            elif node.type == ET.COMM_RECV_NODE:
                receives[(attrs(node)["comm_src"], rank, attrs(node)["comm_tag"])] += 1
    assert sends and sends == receives


def _strip_ddlsim(directory: Path, target: Path, metadata: str | None) -> Path:
    """The export as another tool would write it: no ddlsim attributes, optionally a METADATA node
    with PyTorch's process-group records, in the string form Chakra's converter writes."""
    table = json.loads((directory / "comm_group.json").read_text())
    for file in sorted(directory.glob("*.et")):
        header, nodes = decode_et(file)
        for node in nodes:
            kept = [attribute for attribute in node.attr if not attribute.name.startswith("ddlsim.")]
            del node.attr[:]
            node.attr.extend(kept)
        if metadata is not None:
            node = ET.Node(id=10**6, name="## process_group:init ##", type=ET.METADATA_NODE)
            configs = [{"pg_name": name, "pg_desc": "", "backend_config": "cuda:nccl", "ranks": ranks,
                        "group_size": len(ranks)} for name, ranks in table.items()]
            node.inputs.values = str([json.dumps(configs)]) if metadata == "converter" else json.dumps(configs)
            nodes.insert(0, node)
        write_et(target / file.name, ET.GlobalMetadata(version=header.version), nodes)
    return target


@pytest.mark.parametrize("metadata", ["converter", "json"])
def test_a_foreign_trace_keeps_the_groups_of_its_metadata_node(programs, llama_files, tmp_path, metadata) -> None:
    """The TP 4 x FSDP 2 export without ddlsim's records: the METADATA node's groups come back."""
    program = programs["llama_fsdp_tp"]
    foreign = load_chakra(str(_strip_ddlsim(llama_files, tmp_path, metadata)))
    original = program.collectives
    imported = foreign.collectives
    assert Counter(zip(imported.op, imported.group_size, imported.group_stride, imported.size_bytes)) == \
        Counter(zip(original.op, original.group_size, original.group_stride, original.size_bytes))
    assert set(imported.group_size) == {2, 4}


def test_a_foreign_trace_without_its_groups_is_refused(llama_files, tmp_path) -> None:
    stripped = _strip_ddlsim(llama_files, tmp_path, None)
    (stripped / "comm_group.json").unlink(missing_ok=True)
    with pytest.raises(ConfigError, match=r"names process group '\d+', which no METADATA node and no comm_group"):
        load_chakra(str(stripped))
    shutil.copy(llama_files / "comm_group.json", stripped)  # ASTRA-sim's own table resolves them
    assert set(load_chakra(str(stripped)).collectives.group_size) == {2, 4}


@pytest.mark.skipif(not ASTRA_MICROBENCH.is_dir(), reason="../shared/validation/astra_microbench is not beside the "
                                                          "checkout")
@pytest.mark.parametrize("fabric", ["superpod", "leaf_spine", "torus2d", "ideal", "sipac", "opsquare", "topoopt"])
def test_astra_sims_all_gather_costs_what_astra_sim_means(fabric) -> None:
    """ASTRA-sim's microbenchmarks, 8 NPUs, comm_size 1 MiB: an all-gather gathers 8 MiB, an
    all-reduce reduces 1 MiB, so the gather moves 4x the bytes of the reduce (7/8 of 8 MiB against
    2 x 7/8 of 1 MiB). On RAMP, whose links are fast enough that a 1 MiB all-reduce is bound by
    its three steps' circuit latency and its reductions, the gather is the cheaper of the two."""
    gather = load_chakra(str(ASTRA_MICROBENCH / "all_gather"))
    reduce = load_chakra(str(ASTRA_MICROBENCH / "all_reduce"))
    assert gather.collectives.size_bytes.tolist() == [8 << 20] and reduce.collectives.size_bytes.tolist() == [1 << 20]
    assert gather.collectives.group_size.tolist() == reduce.collectives.group_size.tolist() == [8]
    gather_s = ddlsim.simulate(gather, fabric=fabric, device="h100_sxm").iteration_time_s
    reduce_s = ddlsim.simulate(reduce, fabric=fabric, device="h100_sxm").iteration_time_s
    assert gather_s >= 2.5 * reduce_s


def _foreign(directory: Path, nodes_of_rank, ranks: int = 2) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        write_et(directory / f"foreign.{rank}.et", ET.GlobalMetadata(version="0.0.4"), nodes_of_rank(rank))
    return directory


def _compute(node_id: int, deps=(), num_ops: int = 10**9) -> object:
    node = ET.Node(id=node_id, name=f"mm{node_id}", type=ET.COMP_NODE, data_deps=list(deps))
    node.attr.add(name="num_ops", int64_val=num_ops)
    node.attr.add(name="tensor_size", uint64_val=10**6)
    return node


def _all_reduce(node_id: int, deps=(), size: int | None = 2**20) -> object:
    node = ET.Node(id=node_id, name=f"ar{node_id}", type=ET.COMM_COLL_NODE, data_deps=list(deps))
    node.attr.add(name="comm_type", int64_val=ET.ALL_REDUCE)
    if size is not None:
        node.attr.add(name="comm_size", int64_val=size)
    return node


def _send(node_id: int, kind: int, peer: int | None) -> object:
    node = ET.Node(id=node_id, name=f"p2p{node_id}", type=kind)
    node.attr.add(name="comm_size", int64_val=4096)
    if peer is not None:
        node.attr.add(name="comm_dst" if kind == ET.COMM_SEND_NODE else "comm_src", int32_val=peer)
    return node


@pytest.mark.parametrize("case, nodes, message", [
    ("cycle", lambda rank: [_compute(1, deps=[3]), _compute(2, deps=[1]), _compute(3, deps=[2])],
     r"node \d \('mm\d'\) is on a dependency cycle \(\d -> \d -> \d -> \d\)"),
    ("self", lambda rank: [_compute(1), _compute(2, deps=[2])], r"node 2 \('mm2'\) depends on itself"),
    ("duplicate", lambda rank: [_compute(1), _compute(1)], r"node 1 \('mm1'\) has the id of an earlier node"),
    ("no size", lambda rank: [_compute(1), _all_reduce(2, deps=[1], size=None)],
     r"node 2 \('ar2'\) is a collective without comm_size"),
    ("no receiver", lambda rank: [_send(1, ET.COMM_SEND_NODE, None)],
     r"node 1 \('p2p1'\) is a send with comm_dst none"),
    ("unpaired", lambda rank: [_send(1, ET.COMM_SEND_NODE, 1)] if rank == 0 else [_compute(1)],
     r"foreign\.0\.et': node 1 \('p2p1'\) is where rank 0 sends 1 times to rank 1 but rank 1 receives 0 times"),
])
def test_invalid_graphs_are_one_line_naming_file_and_node(tmp_path, case, nodes, message) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        load_chakra(str(_foreign(tmp_path / case.replace(" ", "_"), nodes)))
    assert "\n" not in str(error.value) and "foreign." in str(error.value)


def test_foreign_compute_is_priced_from_its_flops_or_its_duration(tmp_path) -> None:
    small = load_chakra(str(_foreign(tmp_path / "small", lambda rank: [_compute(10, num_ops=10**12),
                                                                         _all_reduce(11, deps=[10])])))
    large = load_chakra(str(_foreign(tmp_path / "large", lambda rank: [_compute(10, num_ops=2 * 10**12),
                                                                         _all_reduce(11, deps=[10])])))
    time_small = ddlsim.simulate(small, fabric="superpod", device="h100_sxm").compute_time_s
    time_large = ddlsim.simulate(large, fabric="superpod", device="h100_sxm").compute_time_s
    assert time_small > 10**12 / 989e12  # never faster than the H100's dense BF16 peak
    assert time_large / time_small == pytest.approx(2.0, rel=0.01)
    assert small.collectives.op.tolist() == ["all_reduce"] and small.collectives.group_size.tolist() == [2]

    def timed(rank: int) -> list:  # as Chakra's generator writes them: a duration and no work
        first = ET.Node(id=1, name="c1", type=ET.COMP_NODE, duration_micros=5)
        return [first, ET.Node(id=2, name="c2", type=ET.COMP_NODE, duration_micros=5, data_deps=[1])]

    two = load_chakra(str(_foreign(tmp_path / "timed", timed)))
    assert ddlsim.simulate(two, fabric="superpod", device="h100_sxm").compute_time_s == pytest.approx(10e-6)


def test_an_unknown_node_type_is_one_line_naming_the_node(tmp_path) -> None:
    def remote(rank: int) -> list:
        return [ET.Node(id=8, name="MEM_LOAD_NODE", type=ET.MEM_LOAD_NODE)]

    with pytest.raises(ConfigError, match=r"node 8 \('MEM_LOAD_NODE'\) is a MEM_LOAD_NODE, which ddlsim cannot"):
        load_chakra(str(_foreign(tmp_path, remote)))


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
    with pytest.raises(ConfigError, match="must be named <name>.<rank>.et"):
        (tmp_path / "gap" / "odd.et").write_bytes(b"")
        load_chakra(str(tmp_path / "gap" / "*.et"))


def test_a_truncated_file_is_one_line(llama_files, tmp_path) -> None:
    shutil.copytree(llama_files, tmp_path / "cut")
    file = tmp_path / "cut" / "build.0.et"
    file.write_bytes(file.read_bytes()[:-7])
    with pytest.raises(ConfigError, match=r"build\.0\.et': is not a Chakra ET \(TruncatedError: the file ends inside"):
        load_chakra(str(tmp_path / "cut"))


def test_a_trace_larger_than_the_fabric_is_infeasible(llama_files) -> None:
    with pytest.raises(InfeasibleError):
        ddlsim.simulate(load_chakra(str(llama_files)), fabric={"name": "sipac", "r": 2, "levels": 2},
                        device="h100_sxm")
