"""The GPU kernels one rank runs for a compute task, by its signature and phase.

A roofline over a task's totals cannot tell a large, square GEMM from a thin one, nor a layer
bound by its matrix multiplies from one bound by its memory traffic. The kernel lists here give
every kernel its class (`ddlsim.core.work.KernelClass`), GEMM shape, attention shape, FLOPs, DRAM
bytes and host launches, so that `ddlsim.compute.kernel_roofline` prices each on its own, the
same way it prices the kernels a capture records.

- `megatron.py`: Megatron-LM of 2021 (fp16, fused kernels, materialised attention): the GPT of
  the measured A100 runs and the RAMP Megatron encoder;
- `fused.py` (with `parts.py`, `attention.py`, `mla.py`, `moe.py`): a decoder layer as
  today's stacks run it: flash attention, memory-bound runs fused between GEMMs, grouped-GEMM
  experts; `heads.py`: its embedding and output layer;
- `listers.py`: which kind gets which list, registered into compute's kernel registry
  (`ddlsim.compute.kernel_registry`), which imports it when a kind `ddlsim.core.catalog` lists
  for it is first asked for; `spec.py`: what the signature says.

`kernels_for(signature, phase)` is the API; `register_kernels(kind, ...)` adds a kind. Both are
compute's, re-exported here.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

_NAMES = ("has_kernels", "kernel_work", "kernels_for", "register_kernels", "shape_value", "total_bytes", "total_flop")
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_NAMES, "ddlsim.compute.kernel_registry"))
__all__ = list(_NAMES)
