"""(c) Plain data parallelism: a small CNN under `DistributedDataParallel`.

    program = ddlsim.capture(build, mesh_shape=(16,), mesh_dim_names=("dp",))
    ddlsim model=program model.entry=examples.ddp_cnn:build model.mesh_shape=[16] model.mesh_dim_names=[dp]

DDP all-reduces the gradients in buckets while backward runs (``bucket_cap_mb``); the capture
records each bucket's all-reduce where the reducer issues it and the optimizer's wait for it,
so the overlap of gradient communication with backward comes from the program itself. The
bucket all-reduces add up to the parameter bytes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class SmallCNN(nn.Module):
    """Four conv-batchnorm-relu blocks and a classifier: a ResNet-ish stand-in (no torchvision)."""

    def __init__(self, width: int = 64, classes: int = 1000) -> None:
        super().__init__()
        channels = [3, width, 2 * width, 4 * width, 8 * width]
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c_out),
                          nn.ReLU(inplace=True))
            for c_in, c_out in zip(channels, channels[1:]))
        self.classifier = nn.Linear(channels[-1], classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            images = block(images)
        return self.classifier(images.mean(dim=(2, 3)))


def build(mesh, *, width: int = 64, batch: int = 32, image: int = 224, classes: int = 1000, bucket_mb: float = 25.0):
    model = SmallCNN(width, classes)
    ddp = DistributedDataParallel(model, process_group=mesh.get_group(), bucket_cap_mb=bucket_mb)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9, foreach=True)

    def step() -> None:
        images = torch.randn(batch, 3, image, image)
        labels = torch.randint(0, classes, (batch,))
        F.cross_entropy(ddp(images), labels).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step
