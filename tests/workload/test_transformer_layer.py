"""Transformer-layer arithmetic against the closed forms of Megatron, Narayanan and Korthikanti."""

import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.workload.transformer.layer import LayerShape

S, B, H, A = 1024, 4, 2048, 16
LAYER = LayerShape(H, A, S)


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_megatron_params_per_rank(tp):
    # sharded 12h^2 weights and 7h column-parallel biases; replicated 4h norm and 2h row-parallel biases
    assert LAYER.params_per_rank(tp) == (12 * H * H + 7 * H) // tp + 6 * H


def test_whole_layer_params_and_kaplan_count():
    assert LAYER.params() == 12 * H * H + 13 * H
    assert LAYER.matmul_params() == 12 * H * H


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_forward_flop_is_narayanan_formula(tp):
    assert LAYER.forward_flop(B, tp) == (24 * B * S * H * H + 4 * B * S * S * H) / tp
    assert LAYER.backward_flop(B, tp) == 2 * LAYER.forward_flop(B, tp)


def test_activation_bytes_are_korthikanti_closed_forms():
    sbh = S * B * H
    assert LAYER.activation_bytes(B) == sbh * (34 + 5 * A * S / H)
    for t in (2, 4, 8):
        assert LAYER.activation_bytes(B, t) == pytest.approx(sbh * (10 + 24 / t + 5 * A * S / (H * t)))
        assert LAYER.activation_bytes(B, t, sequence_parallel=True) == pytest.approx(sbh / t * (34 + 5 * A * S / H))
    assert LAYER.checkpoint_bytes(B) == 2 * sbh
    assert LAYER.checkpoint_bytes(B, 4, sequence_parallel=True) == 2 * sbh / 4


def test_tp_message_is_bsh_in_fp16():
    assert LAYER.tp_message_bytes(B) == 2 * B * S * H


def test_grouped_query_and_gated_variants():
    llama = LayerShape(4096, 32, 16, ffn_hidden=11008, kv_heads=8, gated_mlp=True, bias=False, rmsnorm=True)
    attention = 4096 * (4096 + 2 * 1024) + 4096 * 4096
    mlp = 3 * 4096 * 11008
    assert llama.params() == attention + mlp + 2 * 4096
    assert llama.params_per_rank(8) == (attention + mlp) // 8 + 2 * 4096


def test_degrees_that_split_a_head_are_infeasible():
    with pytest.raises(InfeasibleError, match="tensor-parallel degree 32 does not divide"):
        LAYER.params_per_rank(32)
    assert LAYER.params_per_rank(32, check=False) > 0


def test_invalid_shapes_are_config_errors():
    with pytest.raises(ConfigError, match="heads = 5: must divide d_model"):
        LayerShape(64, 5, 8)
    with pytest.raises(ConfigError, match="kv_heads"):
        LayerShape(64, 4, 8, kv_heads=3)


def test_signature_shape_round_trip():
    layer = LayerShape(64, 8, 16, ffn_hidden=96, kv_heads=2, causal=True, gated_mlp=True, bias=False)
    assert LayerShape.from_signature_shape(layer.signature_shape(2)) == (layer, 2)
