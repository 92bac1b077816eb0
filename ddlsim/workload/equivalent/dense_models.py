"""Equivalent models of data-parallel dense networks: whole image models and plain MLP stacks.

Kinds ``"alexnet"``, ``"vgg16"``, ``"resnet50"``, ``"beit_large"`` (shape keys: image, classes):
the full model of `ddlsim.workload.vision` on one GPU, fed random images, trained with SGD and
momentum. Kind ``"mlp"`` (shape keys: in, width, layers, out): `layers` Linear + ReLU layers
`width` wide after an input of `in` features, then a Linear to `out` (CANDLE in TopoOpt List 1).
"""

from __future__ import annotations

import torch
from torch import nn

from ddlsim.compute.equivalent_registry import EquivalentShard, register_equivalent
from ddlsim.core.work import ShardSignature
from ddlsim.workload.shard_signatures import IMAGE_SIZE, NUM_CLASSES, mlp_dims
from ddlsim.workload.vision import ARCHITECTURES, build_image_model

MOMENTUM = 0.9
LEARNING_RATE = 0.01


def _sgd(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=LEARNING_RATE, momentum=MOMENTUM)


def _image_builder(architecture: str):
    def build(signature: ShardSignature, device: torch.device) -> EquivalentShard:
        shape = signature.shape_dict
        image, classes = shape.get("image", IMAGE_SIZE), shape.get("classes", NUM_CLASSES)
        module = build_image_model(architecture, classes, device)
        batch = signature.local_batch
        return EquivalentShard(
            module=module,
            make_batch=lambda: (torch.randn(batch, 3, image, image, device=device),),
            loss=lambda logits: logits.float().logsumexp(dim=-1).mean(),
            make_optimizer=_sgd, precision=signature.precision, checkpointing=False)

    return build


for _architecture in ARCHITECTURES:
    register_equivalent(_architecture)(_image_builder(_architecture))


@register_equivalent("mlp")
def build_mlp(signature: ShardSignature, device: torch.device) -> EquivalentShard:
    dims = mlp_dims(signature.shape_dict)
    layers: list[nn.Module] = []
    for index, (i, o) in enumerate(zip(dims, dims[1:])):
        layers.append(nn.Linear(i, o, device=device))
        if index < len(dims) - 2:
            layers.append(nn.ReLU())
    batch = signature.local_batch
    return EquivalentShard(
        module=nn.Sequential(*layers),
        make_batch=lambda: (torch.randn(batch, dims[0], device=device),),
        loss=lambda out: out.float().pow(2).mean(),
        make_optimizer=_sgd, precision=signature.precision, checkpointing=False)
