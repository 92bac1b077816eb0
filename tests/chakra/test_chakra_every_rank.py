"""Every rank file of an analytic Chakra export is checked, not only each stage's first (issue 35):
a truncated, corrupted or swapped file of any rank is one line naming the file, as docs/chakra.md says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ddlsim
from ddlsim.chakra import load_chakra
from ddlsim.chakra.graph_records import FORMAT
from ddlsim.chakra.protoio import write_message
from ddlsim.chakra.schema import ANALYTIC_ATTR, NODES_SHA256_ATTR, RANK_ATTR
from ddlsim.core.errors import ConfigError
from tests.chakra.et_decode import decode_et

# PP 2, TP 2, DP 2: stages of 4 ranks, so ranks 1-3 and 5-7 are not their stage's first
GPT = ["experiment=single", "model=gpt", "model.layers=4", "model.d_model=256", "model.heads=4", "model.seq_len=128",
       "model.global_batch=8", "parallel.tensor=2", "parallel.data=2", "parallel.pipeline=2", "device=h100_sxm",
       "fabric=superpod"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    row = ddlsim.run([*GPT, "training.chakra=true"], output_dir=tmp_path_factory.mktemp("gpt_pp2")).rows[0]
    assert row["status"] == "ok" and row["pp_degree"] == 2
    return Path(row["chakra_dir"])


@pytest.fixture()
def copy(exported, tmp_path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(exported, target)
    return target


def _refused(directory: Path, pattern: str) -> str:
    with pytest.raises(ConfigError, match=pattern) as caught:
        load_chakra(str(directory))
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_every_file_records_its_rank_and_the_sha256_of_its_nodes(exported):
    for rank in range(8):
        header, _ = decode_et(exported / f"gpt.{rank}.et")
        names = {attribute.name for attribute in header.attr}
        assert {RANK_ATTR, NODES_SHA256_ATTR} <= names
        assert json.loads(next(item.string_val for item in header.attr if item.name == ANALYTIC_ATTR))["format"] \
            == FORMAT
    assert load_chakra(str(exported)).num_ranks == 8


@pytest.mark.parametrize("rank", [1, 3, 6])
def test_a_truncated_rank_file_is_refused_whichever_rank(copy, rank):
    path = copy / f"gpt.{rank}.et"
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])  # most likely inside a message
    _refused(copy, rf"gpt\.{rank}\.et'?: (is not a Chakra ET \(TruncatedError|is truncated or changed)")


def test_a_rank_file_cut_at_a_node_boundary_is_refused(copy):
    path = copy / "gpt.5.et"
    header, nodes = decode_et(path)
    with path.open("wb") as handle:  # a file that decodes, one node short
        for message in (header, *nodes[:-1]):
            write_message(handle, message)
    _refused(copy, r"gpt\.5\.et'?: is truncated or changed since the export \(1 of the 8 rank files\)")


def test_a_corrupted_rank_file_is_refused(copy):
    path = copy / "gpt.2.et"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # one bit of the last node: still decodes
    path.write_bytes(bytes(data))
    _refused(copy, r"gpt\.2\.et'?: (is not a Chakra ET|is truncated or changed since the export)")


@pytest.mark.parametrize(("source", "target"), [(1, 2), (5, 7), (0, 3)])
def test_another_rank_s_file_of_the_same_stage_is_refused(copy, source, target):
    shutil.copyfile(copy / f"gpt.{source}.et", copy / f"gpt.{target}.et")
    _refused(copy, rf"gpt\.{target}\.et'?: is not rank {target} of the export gpt\.0\.et belongs to")


def test_an_export_of_the_previous_format_is_refused_with_its_format(copy):
    path = copy / "gpt.0.et"
    header, nodes = decode_et(path)
    for attribute in header.attr:
        if attribute.name == ANALYTIC_ATTR:
            record = json.loads(attribute.string_val)
            record["format"] = "ddlsim.analytic/1"
            attribute.string_val = json.dumps(record, sort_keys=True)
    with path.open("wb") as handle:
        for message in (header, *nodes):
            write_message(handle, message)
    _refused(copy, r"holds an analytic workload of format 'ddlsim.analytic/1'; this ddlsim reads 'ddlsim.analytic/2'")
