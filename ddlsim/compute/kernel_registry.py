"""The kernel-list registry: which function lists the kernels of a signature's model kind.

compute owns it and prices what it lists (`kernel_roofline`); the workload room registers a
lister per model kind with `register_kernels`, and `ddlsim.core.catalog` (group ``kernels``)
names the module that does, imported the first time a kind is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ddlsim.compute.kinds import KindTable
from ddlsim.core.catalog import OPTIONS
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase
from ddlsim.core.work import Kernel, ShardSignature

KernelLister = Callable[[ShardSignature, Phase], list[Kernel]]
KERNEL_LISTERS: KindTable[KernelLister] = KindTable("kernel list", OPTIONS["kernels"])


def register_kernels(*kinds: str) -> Callable[[KernelLister], KernelLister]:
    """Decorator: `lister(signature, phase) -> list[Kernel]` lists the kernels of `kinds`."""
    return KERNEL_LISTERS.register(*kinds)


def has_kernels(kind: str) -> bool:
    return kind in KERNEL_LISTERS


def kernels_for(signature: ShardSignature, phase: Phase | str) -> list[Kernel]:
    """The kernels of one task of `signature` in `phase` (count 1)."""
    lister = KERNEL_LISTERS.get(signature.model_kind)
    if lister is None:
        raise ConfigError("signature.model_kind", signature.model_kind,
                          f"has no kernel list; known kinds: {', '.join(KERNEL_LISTERS.kinds())}")
    return lister(signature, Phase(phase))


def shape_value(signature: ShardSignature, key: str) -> int:
    try:
        return signature.shape_dict[key]
    except KeyError:
        raise ConfigError("signature.shape", signature.shape_dict, f"a {signature.model_kind} needs {key!r}") from None


def total_flop(kernels: Iterable[Kernel]) -> float:
    return sum(kernel.flop for kernel in kernels)


def total_bytes(kernels: Iterable[Kernel]) -> float:
    return sum(kernel.bytes for kernel in kernels)


def kernel_work(signature: ShardSignature, phase: Phase | str) -> tuple[float, float]:
    """(FLOPs, DRAM bytes) of one task of `signature` in `phase`: the work its kernels do."""
    kernels = kernels_for(signature, phase)
    return total_flop(kernels), total_bytes(kernels)
