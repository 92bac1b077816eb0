"""Equivalent models: exact shard shapes, forward and backward on CPU, meta-device builds."""

import pytest
import torch

from ddlsim.compute.equivalent_registry import build_equivalent_shard, equivalent_kinds
from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ShardSignature
from ddlsim.workload.dlrm_arch import DlrmShape, DlrmShard
from ddlsim.workload.shard_signatures import megatron_layer_signature
from ddlsim.workload.transformer.layer import LayerShape

LAYERS = [
    (LayerShape(64, 4, 16), 1),
    (LayerShape(64, 4, 16), 4),
    (LayerShape(96, 6, 8, causal=True), 3),
    (LayerShape(64, 8, 16, ffn_hidden=96, kv_heads=2, gated_mlp=True, bias=False, rmsnorm=True, dropout=False), 2),
]


def count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_contract_kinds_and_model_kinds_are_registered():
    assert {"megatron_layer", "dlrm_shard", "lm_head", "ncf_shard", "mlp", "resnet50", "vgg16", "alexnet",
            "beit_large"} <= set(equivalent_kinds())


def test_unknown_kind_is_a_config_error():
    with pytest.raises(ConfigError, match="model_kind = 'resnet_block'"):
        build_equivalent_shard(ShardSignature("resnet_block", (("x", 1),), 1))


@pytest.mark.parametrize(("layer", "tp"), LAYERS)
def test_megatron_shard_parameters_match_the_megatron_count(layer, tp):
    shard = build_equivalent_shard(megatron_layer_signature(layer, tp, 2), "meta")
    assert count(shard.module) == layer.params_per_rank(tp)


@pytest.mark.parametrize(("layer", "tp"), LAYERS)
def test_megatron_shard_trains_on_cpu(layer, tp):
    torch.manual_seed(0)
    shard = build_equivalent_shard(megatron_layer_signature(layer, tp, 2, checkpointing=True), "cpu")
    assert shard.checkpointing
    (x,) = shard.make_batch()
    assert x.shape == (2, layer.seq_len, layer.d_model) and x.requires_grad
    optimizer = shard.make_optimizer(shard.module.parameters())
    before = shard.module.qkv.weight.detach().clone()
    loss = shard.loss(shard.module(x))
    loss.backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    optimizer.step()
    assert not torch.equal(before, shard.module.qkv.weight)


def test_checkpointed_and_plain_shards_compute_the_same_gradients():
    layer = LayerShape(32, 4, 8, dropout=False)
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(1)
        shard = build_equivalent_shard(megatron_layer_signature(layer, 2, 3, checkpointing=checkpointing), "cpu")
        torch.manual_seed(2)
        (x,) = shard.make_batch()
        shard.loss(shard.module(x)).backward()
        grads.append(shard.module.mlp_in.weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1])


def test_table9_largest_shard_builds_on_meta():
    layer = LayerShape(262144, 65536, 1024)
    shard = build_equivalent_shard(megatron_layer_signature(layer, 65536, 4), "meta")
    out = shard.module(*shard.make_batch())
    assert out.shape == (4, 1024, 262144) and out.device.type == "meta"
    assert count(shard.module) == layer.params_per_rank(65536)


DLRM = DlrmShape(num_tables=4, rows=500, embedding_dim=32, dense_features=13, hidden=64, bottom_layers=3,
                 top_layers=4, pooling=3)


@pytest.mark.parametrize("shard", [DlrmShard(DLRM, 1, 500, 16, 8),  # column-wise, balanced
                                   DlrmShard(DLRM, 2, 500, 32, 2),  # table-wise, balanced
                                   DlrmShard(DLRM, 1, 500, 32, 3)])  # unbalanced: tiled stand-in
def test_dlrm_shard_runs_forward_and_backward_on_cpu_with_torchrec(shard):
    torch.manual_seed(0)
    equivalent = build_equivalent_shard(shard.signature(6), "cpu")
    assert count(equivalent.module) == shard.params()
    dense, sparse, labels = equivalent.make_batch()
    assert dense.shape == (6, DLRM.dense_features) and labels.shape == (6,)
    assert sparse.keys() == [f"feature{i}" for i in range(shard.local_tables)]
    assert sparse.values().numel() == shard.local_tables * 6 * shard.world * DLRM.pooling
    optimizer = equivalent.make_optimizer(equivalent.module.parameters())
    tables_before = [p.detach().clone() for p in equivalent.module.embedding_bags.parameters()]
    mlp_before = equivalent.module.top_mlp[0].weight.detach().clone()
    loss = equivalent.step(optimizer)
    assert torch.isfinite(loss)
    tables_after = list(equivalent.module.embedding_bags.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(tables_before, tables_after)), "embeddings were not updated"
    assert not torch.equal(mlp_before, equivalent.module.top_mlp[0].weight)


def test_dlrm_shard_builds_on_meta():
    shard = DlrmShard(DlrmShape(8, 10**7, 4096, 16, 1024, 4, 5), 1, 10**7, 128, 256)
    equivalent = build_equivalent_shard(shard.signature(8192), "meta")
    assert count(equivalent.module) == shard.params()
    assert not equivalent.module.fused_embeddings


def test_lm_head_shard_matches_its_signature_and_trains():
    from ddlsim.workload.shard_signatures import lm_head_flop, lm_head_signature

    signature = lm_head_signature(32, 101, 8, 4, 2)
    shard = build_equivalent_shard(signature, "cpu")
    assert shard.module.projection.weight.shape == (26, 32)  # ceil(101 / 4) vocabulary rows
    assert lm_head_flop(signature) == 2.0 * 2 * 8 * 32 * 26
    assert torch.isfinite(shard.step(shard.make_optimizer(shard.module.parameters())))


def test_ncf_shard_parameters_and_training():
    from ddlsim.workload.ncf import NcfShape, NcfShard

    shard = NcfShard(NcfShape(mf_tables=2, mlp_tables=2, rows=50, mf_dim=4, mlp_dim=8, hidden=16, layers=2), world=3)
    assert shard.local_dims() == [8, 8, 4]  # tables 0, 3, 6 of [8, 8, 8, 8, 4, 4, 4, 4]
    equivalent = build_equivalent_shard(shard.signature(5), "cpu")
    assert count(equivalent.module) == shard.params()
    assert torch.isfinite(equivalent.step(equivalent.make_optimizer(equivalent.module.parameters())))


@pytest.mark.parametrize(("architecture", "image"), [("alexnet", 64), ("resnet50", 32)])
def test_image_model_shard_trains_on_cpu(architecture, image):
    from ddlsim.workload.shard_signatures import image_signature
    from ddlsim.workload.vision import architecture_params

    shard = build_equivalent_shard(image_signature(architecture, 2, image=image, classes=10), "cpu")
    assert count(shard.module) == architecture_params(architecture, 10)
    assert torch.isfinite(shard.step(shard.make_optimizer(shard.module.parameters())))


def test_mlp_shard_shapes():
    from ddlsim.workload.shard_signatures import mlp_signature

    shard = build_equivalent_shard(mlp_signature(8, 16, 3, 1, 4), "meta")
    assert count(shard.module) == (8 * 16 + 16) + 2 * (16 * 16 + 16) + (16 + 1)
