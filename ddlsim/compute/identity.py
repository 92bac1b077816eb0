"""Which physical device a measurement comes from, named precisely enough never to confuse two.

Profiles are keyed by this name. A GPU is named as CUDA reports it ("NVIDIA H100 80GB HBM3");
a CPU by its model string, its family/model/stepping numbers and the number of threads torch
computes with, because a "Xeon" profile from another machine, or one taken with another thread
count, must never be read as this machine's.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path

from ddlsim.core.errors import ConfigError, InfeasibleError

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class DeviceIdentity:
    """A measured device: its full name (the profile key), torch device type and software."""

    name: str
    torch_device: str
    torch_version: str
    cuda_version: str

    @property
    def slug(self) -> str:
        return device_slug(self.name)


def device_slug(name: str) -> str:
    """The directory name of a device's profiles: lower case, runs of other characters -> '-'."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise ConfigError("device name", name, "needs letters or digits to name a profile directory")
    return slug


def _cpuinfo_fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:  # the first processor block ends at the first blank line
                break
            continue
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_name(num_threads: int, cpuinfo_text: str | None = None) -> str:
    """E.g. ``AMD EPYC (family 26, model 2, stepping 1), 2 threads``."""
    if cpuinfo_text is None:
        try:
            cpuinfo_text = CPUINFO.read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo_text = ""
    fields = _cpuinfo_fields(cpuinfo_text)
    model = fields.get("model name") or platform.processor() or platform.machine() or "unknown CPU"
    numbers = [f"{label} {fields[key]}" for key, label in
               (("cpu family", "family"), ("model", "model"), ("stepping", "stepping")) if key in fields]
    detail = f" ({', '.join(numbers)})" if numbers else ""
    threads = "thread" if num_threads == 1 else "threads"
    return f"{model}{detail}, {num_threads} {threads}"


def local_cpu_name() -> str:
    import torch

    return cpu_name(torch.get_num_threads())


def local_identity(torch_device: str = "auto") -> DeviceIdentity:
    """The device a profile run on `torch_device` ("auto", "cpu", "cuda", "cuda:1") measures."""
    import torch

    if torch_device == "auto":
        torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    kind = torch.device(torch_device).type
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise InfeasibleError(f"torch device {torch_device!r} was asked for, but CUDA is not available here")
        name = torch.cuda.get_device_name(torch.device(torch_device))
    elif kind == "cpu":
        name = local_cpu_name()
    else:
        raise ConfigError("torch_device", torch_device, "only cpu and cuda devices can be profiled")
    return DeviceIdentity(name=name, torch_device=torch_device, torch_version=torch.__version__,
                          cuda_version=torch.version.cuda or "")
