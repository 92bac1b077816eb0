"""Each example of examples/ captured at a small size, with the collectives its parallelism implies."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import ddlsim
from ddlsim.core.errors import ConfigError
from examples.llama_fsdp_tp import SHAPES
from examples.llama_fsdp_tp import build as llama
from examples.moe_expert_parallel import build as moe

ROOT = Path(__file__).resolve().parents[2]

BF16 = 2


def test_llama_fsdp_tensor_and_sequence_parallel():
    """Sequence parallelism: per layer an all-gather before attention and before the MLP and a
    reduce-scatter after each, of b x s x h values; FSDP2 over dp; loss-parallel cross-entropy."""
    dp, tp, batch = 2, 2, 1
    tiny = SHAPES["tiny"]
    program = ddlsim.capture(partial(llama, batch=batch), (dp, tp), ("dp", "tp"))
    calls = program.collective_summary(by=("op", "size_bytes", "group_size", "group_stride", "phase"))
    message = batch * tiny["seq_len"] * tiny["hidden_size"] * BF16
    forward_tp = calls[(calls.phase == "forward") & (calls.group_size == tp) & (calls.size_bytes == message)]
    layers = tiny["num_hidden_layers"]
    counts = dict(zip(forward_tp.op, forward_tp["count"], strict=True))
    assert counts["reduce_scatter"] == 2 * layers + 1  # attention, MLP, and the embedding
    assert counts["all_gather"] == 2 * layers + 1  # attention, MLP, and the output layer
    fsdp = calls[(calls.group_size == dp) & (calls.group_stride == tp)]
    assert set(fsdp.op) == {"all_gather", "reduce_scatter"}
    result = ddlsim.simulate(program, fabric="superpod", device="h100_sxm")
    assert result.iteration_time_s > 0 and result.comm_time_s > 0


@pytest.mark.parametrize("dispatch", ["capacity", "dropless"])
def test_moe_expert_parallel_all_to_all(dispatch):
    """Dispatch and combine all-to-alls per layer, forward and backward; dropless moves tokens x
    top-k x hidden x bytes, capacity-based experts x capacity x hidden x bytes."""
    dp, ep, batch, seq, hidden, experts, top_k, layers = 2, 4, 4, 128, 256, 8, 2, 2
    program = ddlsim.capture(partial(moe, dispatch=dispatch, batch=batch, seq_len=seq, hidden=hidden,
                                     experts=experts, top_k=top_k, layers=layers), (dp, ep), ("dp", "ep"))
    calls = program.collective_summary(by=("op", "size_bytes", "group_size", "group_stride", "phase"))
    tokens = batch * seq
    if dispatch == "capacity":
        capacity = -(-tokens * top_k * 1.25 // experts)
        size = int(experts * capacity * hidden * BF16)
    else:
        size = tokens * top_k * hidden * BF16
    moves = calls[(calls.op == "all_to_all") & (calls.size_bytes == size)]
    assert set(zip(moves.group_size, moves.group_stride)) == {(ep, 1)}
    assert dict(zip(moves.phase, moves["count"], strict=True)) == {"forward": 2 * layers, "backward": 2 * layers}
    assert ddlsim.simulate(program, fabric="superpod").comm_time_s > 0


def test_moe_split_sizes_follow_the_expert_load():
    """A skewed load makes one destination receive more: the all-to-all is priced by its largest block."""
    skewed = ddlsim.capture(partial(moe, dispatch="dropless", layers=1), (1, 4), ("dp", "ep"),
                            expert_load=[4, 1, 1, 2])
    moves = skewed.collectives[(skewed.collectives.op == "all_to_all") & (skewed.collectives.dtype == "bfloat16")]
    assert moves.imbalance.max() == pytest.approx(2.0)


def test_an_entry_may_be_a_file_path(tmp_path) -> None:
    from ddlsim.capture.api import resolve_entry

    script = tmp_path / "train.py"
    script.write_text("def build(mesh):\n    return lambda: None\n", encoding="utf-8")
    assert resolve_entry(f"{script}:build").__name__ == "build"
    with pytest.raises(ConfigError, match=r"entry = .*no such file"):
        resolve_entry(f"{tmp_path / 'missing.py'}:build")


def test_shipped_examples_answer_outside_a_checkout(tmp_path, monkeypatch) -> None:
    """Away from the checkout (no top-level ``examples`` package), ``examples.<name>`` is the copy
    shipped as ``ddlsim.examples``."""
    import sys

    from ddlsim.capture.api import resolve_entry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(ROOT))])
    for name in [name for name in sys.modules if name == "examples" or name.startswith("examples.")]:
        monkeypatch.delitem(sys.modules, name)
    shipped = pytest.importorskip("ddlsim.examples", reason="the installed ddlsim maps no examples package")
    assert resolve_entry("examples.ddp_cnn:build").__module__ == "ddlsim.examples.ddp_cnn"
    assert shipped.__name__ == "ddlsim.examples"
