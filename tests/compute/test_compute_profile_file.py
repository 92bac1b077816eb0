"""The profile CSV: keys, deterministic order, replace only when asked."""

import pytest

from ddlsim.compute.profile_file import (
    COLUMNS,
    merge_rows,
    parse_row,
    parse_signature_key,
    profile_path,
    read_rows,
    write_rows,
)
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase
from ddlsim.core.work import ShardSignature

SIGNATURE = ShardSignature("megatron_layer", (("d_model", 64), ("heads", 4)), 2, "bf16", True)


def row(phase="forward", time_s="0.001", device="cpu-a", key=None, task_flop=""):
    return {"signature_key": key or SIGNATURE.key(), "model_kind": "megatron_layer", "shape": "d_model=64;heads=4",
            "local_batch": "2", "precision": "bf16", "checkpointing": "true", "phase": phase, "device": device,
            "time_s": time_s, "counted_flop": "100.0", "counted_bytes": "50.0", "task_flop": task_flop,
            "task_memory_bytes": "", "kernels": "7"}


def test_signature_key_round_trips():
    assert parse_signature_key(SIGNATURE.key()) == SIGNATURE
    with pytest.raises(ConfigError, match="signature"):
        parse_signature_key("megatron_layer|d_model=64")


def test_path_is_device_then_kind(tmp_path):
    assert profile_path(tmp_path, "NVIDIA H200", "dlrm_shard") == tmp_path / "nvidia-h200" / "dlrm-shard.csv"


def test_rows_are_kept_unless_replace(tmp_path):
    path = tmp_path / "kind.csv"
    first = write_rows(path, [row("backward"), row("forward")])
    assert (first.added, first.replaced, first.kept) == (2, 0, 0)
    again = write_rows(path, [row("forward", time_s="0.5")])
    assert (again.added, again.kept) == (0, 1)
    assert [r["time_s"] for r in read_rows(path) if r["phase"] == "forward"] == ["0.001"]
    replaced = write_rows(path, [row("forward", time_s="0.5")], replace=True)
    assert replaced.replaced == 1
    rows = read_rows(path)
    assert [r["phase"] for r in rows] == ["forward", "backward"]  # sorted in phase order
    assert [r["time_s"] for r in rows if r["phase"] == "forward"] == ["0.5"]
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS)


def test_same_rows_same_bytes(tmp_path):
    write_rows(tmp_path / "a.csv", [row("forward"), row("backward")])
    write_rows(tmp_path / "b.csv", [row("backward"), row("forward")])
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_rows_of_two_devices_are_two_keys():
    merged, added, _, _ = merge_rows([row(device="cpu-a")], [row(device="cpu-b")], replace=False)
    assert added == 1 and len(merged) == 2


def test_parse_prefers_the_workloads_flop_figure():
    assert parse_row(row(task_flop="400.0")).flop == 400.0
    parsed = parse_row(row())
    assert parsed.flop == 100.0 and parsed.memory_bytes == 50.0 and parsed.phase is Phase.FORWARD


def test_not_a_profile(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match="not a ddlsim profile"):
        read_rows(path)
