"""Programs written for real training capture as they are (issue 25): initialisers in ``__init__``,
``device="cuda"``, ``torch.compile``; what cannot be captured is one line naming the module and the
user's source line, with torch's own traceback kept out of the output unless DDLSIM_DEBUG=1."""

from __future__ import annotations

import inspect
import logging

import pandas as pd
import pytest
import torch
from torch import nn

import ddlsim
from ddlsim.capture.compiled import CompileIgnored
from ddlsim.capture.program import CapturedProgram
from ddlsim.core.errors import ConfigError, DdlsimError, InfeasibleError


class PatchEmbedding(nn.Module):
    """ViT/timm style: positional embeddings and weights drawn with trunc_normal_ in __init__."""

    def __init__(self, device: str | None = None) -> None:
        super().__init__()
        self.position = nn.Parameter(torch.zeros(1, 16, 64, device=device))
        self.projection = nn.Linear(64, 64, device=device)
        nn.init.trunc_normal_(self.position, std=0.02)
        nn.init.trunc_normal_(self.projection.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.projection(x + self.position)


class ReadsAScalar(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.sum().item() > 0:  # the line the error must name
            return y
        return -y


SCALAR_LINE = inspect.getsourcelines(ReadsAScalar.forward)[1] + 2


def _program(make_model, *, device: str | None = None, compile_model: bool = False):
    def build(mesh):
        model = make_model()
        if compile_model:
            model = torch.compile(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def step():
            width = 64 if isinstance(model, PatchEmbedding) or compile_model else 8
            model(torch.randn(2, 16, width, device=device)).sum().backward()
            optimizer.step()

        return step

    return build


def _ops(program: CapturedProgram) -> list[str]:
    return program.events["op"].tolist()


def test_trunc_normal_initialisers_capture() -> None:
    program = ddlsim.capture(_program(PatchEmbedding), mesh_shape=(1,), mesh_dim_names=("dp",))
    assert any(op in ("mm", "addmm", "aten.mm", "aten.addmm") for op in _ops(program))


def test_initialisers_still_initialise_real_tensors() -> None:
    program = ddlsim.capture(_program(PatchEmbedding), mesh_shape=(1,), mesh_dim_names=("dp",))
    assert len(program.events) > 0
    real = torch.zeros(1000)
    nn.init.trunc_normal_(real, std=1.0)  # after the capture the initialiser is torch's own again
    assert real.abs().max() <= 2.0 and real.std() > 0.5


def test_cuda_devices_map_to_the_fake_device() -> None:
    on_cpu = ddlsim.capture(_program(PatchEmbedding), mesh_shape=(1,), mesh_dim_names=("dp",))
    on_cuda = ddlsim.capture(_program(lambda: PatchEmbedding("cuda").cuda(), device="cuda"),
                             mesh_shape=(1,), mesh_dim_names=("dp",))
    assert _ops(on_cuda) == _ops(on_cpu)
    assert on_cuda.events["flop"].sum() == on_cpu.events["flop"].sum()


def test_torch_compile_records_the_eager_ops_and_says_so_once() -> None:
    eager = ddlsim.capture(_program(PatchEmbedding), mesh_shape=(1,), mesh_dim_names=("dp",))
    with pytest.warns(CompileIgnored, match="torch.compile is not traced") as warned:
        compiled = ddlsim.capture(_program(PatchEmbedding, compile_model=True), mesh_shape=(1,),
                                  mesh_dim_names=("dp",))
    assert len([w for w in warned if issubclass(w.category, CompileIgnored)]) == 1
    assert _ops(compiled) == _ops(eager)
    assert torch.compile.__module__.startswith("torch")  # restored after the capture


def test_item_names_the_module_and_the_source_line() -> None:
    with pytest.raises(InfeasibleError) as raised:
        ddlsim.capture(_program(ReadsAScalar), mesh_shape=(1,), mesh_dim_names=("dp",))
    message = str(raised.value)
    assert "\n" not in message
    assert "in module ReadsAScalar" in message and f"{__file__}:{SCALAR_LINE}" in message
    assert ".item()" in message and "MoE" not in message
    assert raised.value.cause is not None and raised.value.__cause__ is None


def test_a_failing_meta_kernel_logs_no_torch_traceback(caplog, monkeypatch) -> None:
    def build(mesh):
        linear = nn.Linear(8, 8)
        return lambda: linear(torch.randn(2, 7)).sum().backward()

    monkeypatch.delenv("DDLSIM_DEBUG", raising=False)
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as raised:
        ddlsim.capture(build, mesh_shape=(1,), mesh_dim_names=("dp",))
    assert not [record for record in caplog.records if record.name.startswith("torch")]
    assert "same reduction dim" in str(raised.value) and __file__ in str(raised.value)
    assert isinstance(raised.value.cause, RuntimeError) and raised.value.__cause__ is None

    monkeypatch.setenv("DDLSIM_DEBUG", "1")
    with pytest.raises(ConfigError) as debugged:
        ddlsim.capture(build, mesh_shape=(1,), mesh_dim_names=("dp",))
    assert isinstance(debugged.value.__cause__, RuntimeError)


def test_a_broken_capture_file_is_one_line_naming_the_key(tmp_path) -> None:
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ConfigError, match=r"^capture = '.*broken.parquet': is not a readable Parquet capture"):
        CapturedProgram.load(broken)
    not_a_capture = tmp_path / "plain.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(not_a_capture)
    with pytest.raises(ConfigError, match="is not a ddlsim capture"):
        CapturedProgram.load(not_a_capture)


def _deepseek_v3_gqa(mesh, dtype=torch.bfloat16):
    transformers = pytest.importorskip("transformers")
    config = transformers.DeepseekV3Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
        first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=2, n_routed_experts=4,
        num_experts_per_tok=2, n_group=1, topk_group=1, q_lora_rank=None, kv_lora_rank=32, qk_rope_head_dim=8,
        qk_nope_head_dim=8, v_head_dim=16, use_cache=False, max_position_embeddings=128)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    finally:
        torch.set_default_dtype(previous)
    ids = torch.randint(0, 256, (2, 16))
    return lambda: model(input_ids=ids, labels=ids).loss.backward()


def test_deepseek_v3_with_gqa_captures() -> None:
    program = ddlsim.capture(_deepseek_v3_gqa, (1,), ("dp",))  # 2 KV heads under 4 query heads
    assert program.compute.flop.sum() > 0


def test_deepseek_v3_in_float32_is_one_line_naming_the_module_and_line() -> None:
    # CPU eager runs the experts' grouped_mm in float32; its meta kernel (CUDA's rule) wants bf16
    with pytest.raises(DdlsimError) as caught:
        ddlsim.capture(lambda mesh: _deepseek_v3_gqa(mesh, torch.float32), (1,), ("dp",))
    text = str(caught.value)
    assert "\n" not in text and "mlp.experts" in text and f"{__file__}:" in text
