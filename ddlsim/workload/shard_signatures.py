"""The signatures of equivalent shards and the figures analytic models derive from them.

A workload names each compute task by a `ShardSignature`; `ddlsim.workload.equivalent` builds the
matching `torch.nn.Module` when one is profiled. The signatures, and the FLOP and byte figures
of the output layer, live here, apart from the modules, so that building a workload never
loads torch.
"""

from __future__ import annotations

import math

from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ShardSignature
from ddlsim.workload.transformer.layer import LayerShape

IMAGE_SIZE = 224
NUM_CLASSES = 1000


def megatron_layer_signature(layer: LayerShape, tp: int, local_batch: int, *, precision: str = "fp16",
                             checkpointing: bool = True, kind: str = "megatron_layer") -> ShardSignature:
    """The signature of one layer's shard (`kind` lets a decoder model use its own name)."""
    layer.check_tp(tp)
    return ShardSignature(kind, tuple(layer.signature_shape(tp).items()), local_batch, precision, checkpointing)


def lm_head_shape(signature: ShardSignature) -> tuple[int, int, int, int]:
    """(d_model, vocab, seq_len, tp) of an output-layer signature."""
    shape = signature.shape_dict
    try:
        return shape["d_model"], shape["vocab"], shape["seq_len"], shape.get("tp", 1)
    except KeyError as missing:
        raise ConfigError("signature.shape", shape, f"an output layer needs {missing}") from None


def _signature(kind: str, shape: dict[str, int], local_batch: int, precision: str) -> ShardSignature:
    """A shard without activation checkpointing."""
    return ShardSignature(kind, tuple(sorted(shape.items())), local_batch, precision, False)


def lm_head_signature(d_model: int, vocab: int, seq_len: int, tp: int, local_batch: int,
                      precision: str = "fp16", extra: dict[str, int] | None = None) -> ShardSignature:
    """`extra`: further shape keys that select the kernel list (`ddlsim.workload.kernels.spec.head_keys`)."""
    return _signature("lm_head", {"d_model": d_model, "vocab": vocab, "seq_len": seq_len, "tp": tp, **(extra or {})},
                      local_batch, precision)


def local_vocab(vocab: int, tp: int) -> int:
    """Rows of the vocabulary one rank holds (Megatron pads the vocabulary to a multiple of tp)."""
    return math.ceil(vocab / tp)


def lm_head_flop(signature: ShardSignature) -> float:
    d_model, vocab, seq_len, tp = lm_head_shape(signature)
    return 2.0 * signature.local_batch * seq_len * d_model * local_vocab(vocab, tp)


def image_signature(architecture: str, local_batch: int, precision: str = "fp32", *, image: int = IMAGE_SIZE,
                    classes: int = NUM_CLASSES) -> ShardSignature:
    return _signature(architecture, {"image": image, "classes": classes}, local_batch, precision)


def mlp_dims(shape: dict[str, int]) -> list[int]:
    try:
        return [shape["in"], *[shape["width"]] * shape["layers"], shape["out"]]
    except KeyError as missing:
        raise ConfigError("signature.shape", shape, f"an MLP needs {missing}") from None


def mlp_signature(in_features: int, width: int, layers: int, out_features: int, local_batch: int,
                  precision: str = "fp32") -> ShardSignature:
    return _signature("mlp", {"in": in_features, "width": width, "layers": layers, "out": out_features},
                      local_batch, precision)
