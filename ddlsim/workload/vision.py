"""Image models built from their layer shapes: AlexNet, VGG-16, ResNet-50 (written here as
`torch.nn` modules, since torchvision is not a dependency) and BEiT-L (from transformers).

Parameter counts, gradient sizes and forward FLOPs are read from the modules built on the meta
device (no memory, no download), never typed in. Widths follow the original papers:

- AlexNet: Krizhevsky et al. 2012, conv widths 96-256-384-384-256 without the two-GPU grouping,
  6 x 6 x 256 -> 4096 -> 4096 -> classes (62.4 M parameters, the figure WRHT quotes as 62.3 M);
- VGG-16: Simonyan and Zisserman 2015, configuration D (138.4 M);
- ResNet-50: He et al. 2016, bottleneck blocks [3, 4, 6, 3] (25.6 M);
- BEiT-L/16: Bao et al. 2022 via `transformers.BeitConfig` (24 layers, 1024 wide, 16 heads,
  relative position bias per layer, layer scale, mean pooling).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Precision
from ddlsim.workload.shard_signatures import IMAGE_SIZE, NUM_CLASSES


def alexnet(num_classes: int = NUM_CLASSES) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.AdaptiveAvgPool2d(6), nn.Flatten(),
        nn.Dropout(), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
        nn.Dropout(), nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Linear(4096, num_classes),
    )


VGG16_CONFIG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def vgg16(num_classes: int = NUM_CLASSES) -> nn.Module:
    layers: list[nn.Module] = []
    channels = 3
    for item in VGG16_CONFIG:
        if item == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(channels, int(item), 3, padding=1), nn.ReLU(inplace=True)]
            channels = int(item)
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(7), nn.Flatten(),
                         nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(),
                         nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(), nn.Linear(4096, num_classes))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels: int, width: int, stride: int) -> None:
        super().__init__()
        out = width * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(inplace=True), nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out))
        self.shortcut = (nn.Sequential(nn.Conv2d(in_channels, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))
                         if stride != 1 or in_channels != out else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet50(num_classes: int = NUM_CLASSES) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                               nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, padding=1)]
    channels = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        for block in range(blocks):
            layers.append(Bottleneck(channels, width, 2 if block == 0 and stage > 0 else 1))
            channels = width * Bottleneck.expansion
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes))


class _LogitsOnly(nn.Module):
    """A transformers image classifier that returns its logits tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).logits


def beit_large(num_classes: int = NUM_CLASSES) -> nn.Module:
    from transformers import BeitConfig, BeitForImageClassification

    config = BeitConfig(image_size=IMAGE_SIZE, patch_size=16, hidden_size=1024, num_hidden_layers=24,
                        num_attention_heads=16, intermediate_size=4096, use_relative_position_bias=True,
                        use_shared_relative_position_bias=False, layer_scale_init_value=0.1,
                        use_mean_pooling=True, num_labels=num_classes)
    return _LogitsOnly(BeitForImageClassification(config))


ARCHITECTURES: dict[str, Callable[[int], nn.Module]] = {
    "alexnet": alexnet, "vgg16": vgg16, "resnet50": resnet50, "beit_large": beit_large,
}


def build_image_model(name: str, num_classes: int = NUM_CLASSES, device: str | torch.device = "meta") -> nn.Module:
    if name not in ARCHITECTURES:
        raise ConfigError("architecture", name, f"is not an image model; choose one of {', '.join(ARCHITECTURES)}")
    with torch.device(device):
        return ARCHITECTURES[name](num_classes)


def architecture_params(name: str, num_classes: int = NUM_CLASSES) -> int:
    """Trainable parameters of `name`, counted on the module built from its layer shapes (once per process)."""
    return PROCESS_CACHES.memo("image model parameters", maxsize=16).get_or_make(
        (name, num_classes), lambda: sum(p.numel() for p in build_image_model(name, num_classes).parameters()
                                         if p.requires_grad))


def gradient_bytes(name: str, precision: Precision | str = Precision.FP32, num_classes: int = NUM_CLASSES) -> int:
    """Bytes of one data-parallel gradient all-reduce of `name`: every parameter at `precision`."""
    return Precision(precision).bytes_per_element * architecture_params(name, num_classes)


def forward_flop_per_sample(name: str, num_classes: int = NUM_CLASSES, image_size: int = IMAGE_SIZE) -> float:
    """Forward FLOPs of one image, counted by torch's FlopCounterMode on the meta device (once per process)."""
    return PROCESS_CACHES.memo("image model FLOPs", maxsize=16).get_or_make(
        (name, num_classes, image_size), lambda: _count_forward_flop(name, num_classes, image_size))


def _count_forward_flop(name: str, num_classes: int, image_size: int) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    model = build_image_model(name, num_classes)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(torch.empty(1, 3, image_size, image_size, device="meta"))
    return float(counter.get_total_flops())
