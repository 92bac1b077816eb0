"""The memory-bound kernels and GEMM groups a fused decoder layer is built of (`fused.py`)."""

from __future__ import annotations

from ddlsim.types import Kernel, KernelClass
from ddlsim.workload.kernels.primitives import A, gemm, host_calls, memory
from ddlsim.workload.kernels.spec import LayerSpec
from ddlsim.workload.transformer_layer import MASK_BYTES

NORM, ACTIVATION = KernelClass.NORM, KernelClass.ACTIVATION
STAT_BYTES = 4  # one fp32 statistic per token: RMSNorm's reciprocal RMS (LayerNorm keeps the mean too)


def _norm_extras(spec: LayerSpec) -> tuple[int, int]:
    """(statistics bytes, weight bytes) of one norm."""
    count = 1 if spec.layer.rmsnorm else 2
    return STAT_BYTES * count * spec.norm_tokens, A * count * spec.layer.d_model


def add_norm(spec: LayerSpec, name: str) -> Kernel:
    """A branch's residual add (with its row-parallel bias and dropout) fused into the next norm."""
    layer, tokens, h = spec.layer, spec.norm_tokens, spec.layer.d_model
    stats, weights = _norm_extras(spec)
    size = 4 * A * tokens * h + stats + weights + (A * h if layer.bias else 0) + \
        (MASK_BYTES * tokens * h if layer.dropout else 0)
    return memory(name, size, kernel_class=NORM)


def add_norm_backward(spec: LayerSpec, name: str, partials: int = 1) -> Kernel:
    """Its backward: reads the normed activation's gradient (`partials` GEMM outputs to sum), the
    saved input and statistics and the residual gradient; writes the residual gradient (and,
    under dropout, the masked gradient of the branch before it)."""
    layer, tokens, h = spec.layer, spec.norm_tokens, spec.layer.d_model
    stats, weights = _norm_extras(spec)
    size = (partials + 3) * A * tokens * h + stats + weights
    if layer.dropout:
        size += (MASK_BYTES + A) * tokens * h
    return memory(name, size, kernel_class=NORM)


def projections(name: str, tokens: int, widths: tuple[int, ...], d_in: int, split: bool,
                bias: bool = False) -> list[Kernel]:
    if split:
        return [gemm(f"{name}_{index}", tokens, width, d_in, bias=bias) for index, width in enumerate(widths)]
    return [gemm(name, tokens, sum(widths), d_in, bias=bias)]


def linear_backward(name: str, tokens: int, out_width: int, in_width: int) -> list[Kernel]:
    return [gemm(f"{name}_dgrad", tokens, in_width, out_width), gemm(f"{name}_wgrad", out_width, in_width, tokens)]


def projections_backward(name: str, tokens: int, widths: tuple[int, ...], d_in: int, split: bool) -> list[Kernel]:
    """Gradients of `projections`; split projections' input gradients are summed by the consumer."""
    if split:
        return [kernel for index, width in enumerate(widths)
                for kernel in linear_backward(f"{name}_{index}", tokens, width, d_in)]
    return linear_backward(name, tokens, sum(widths), d_in)


def activation(spec: LayerSpec, name: str, tokens: int, width: int, backward: bool = False) -> Kernel:
    """SwiGLU (reads gate and up, writes their product) or GeLU, over `tokens` x `width` (local)."""
    # backward: the gradient and the saved inputs read, the inputs' gradients written
    passes = (5 if backward else 3) if spec.layer.gated_mlp else (3 if backward else 2)
    size = A * tokens * width * passes
    return memory(f"{name}_backward" if backward else name, size, kernel_class=ACTIVATION)


def dense_mlp(spec: LayerSpec) -> list[Kernel]:
    tokens, h, f = spec.tokens, spec.layer.d_model, spec.ffn
    widths = (f, f) if spec.layer.gated_mlp else (f,)
    return [*projections("mlp_in", tokens, widths, h, spec.split, spec.layer.bias),
            activation(spec, "activation", tokens, f), gemm("mlp_out", tokens, h, f)]


def dense_mlp_backward(spec: LayerSpec) -> tuple[list[Kernel], int]:
    """(kernels, partial input gradients the norm's backward sums)."""
    tokens, h, f = spec.tokens, spec.layer.d_model, spec.ffn
    widths = (f, f) if spec.layer.gated_mlp else (f,)
    kernels = [*linear_backward("mlp_out", tokens, h, f), activation(spec, "activation", tokens, f, backward=True),
               *projections_backward("mlp_in", tokens, widths, h, spec.split)]
    return kernels, len(widths) if spec.split else 1


def tp_calls(spec: LayerSpec) -> list[Kernel]:
    """The host side of the layer's TP collectives: two all-reduces, or with SP two all-gathers
    and two reduce-scatters."""
    return host_calls("tensor_parallel_collective_call", (4 if spec.sp else 2) if spec.tp > 1 else 0)
