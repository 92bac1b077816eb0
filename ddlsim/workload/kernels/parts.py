"""The kernels and kernel groups a decoder layer of `fused.py` is built of."""

from __future__ import annotations

from ddlsim.core.work import Kernel, KernelClass
from ddlsim.workload.kernels.primitives import A, gemm, host_calls, memory
from ddlsim.workload.kernels.spec import LayerSpec
from ddlsim.workload.transformer.layer import MASK_BYTES

NORM, ACTIVATION = KernelClass.NORM, KernelClass.ACTIVATION
STAT_BYTES = 4  # one fp32 statistic per token: RMSNorm's reciprocal RMS (LayerNorm keeps the mean too)


def _norm_extras(spec: LayerSpec) -> tuple[int, int]:
    """(statistics bytes, weight bytes) of one norm."""
    count = 1 if spec.layer.rmsnorm else 2
    return STAT_BYTES * count * spec.norm_tokens, A * count * spec.layer.d_model


def norm(spec: LayerSpec, name: str) -> Kernel:
    """RMSNorm or LayerNorm: reads the input and weights, writes the normed activation and the
    fp32 statistics the backward reuses."""
    stats, weights = _norm_extras(spec)
    return memory(name, 2 * A * spec.norm_tokens * spec.layer.d_model + stats + weights, kernel_class=NORM)


def norm_backward(spec: LayerSpec, name: str) -> Kernel:
    """Reads the gradient, the saved input, statistics and weights; writes the input's gradient
    and the weights' gradients."""
    stats, weights = _norm_extras(spec)
    return memory(name, 3 * A * spec.norm_tokens * spec.layer.d_model + stats + 2 * weights, kernel_class=NORM)


def residual_add(spec: LayerSpec, name: str) -> Kernel:
    """A branch added to the residual stream (Megatron's bias-dropout-add): reads the branch (and
    its row-parallel bias) and the residual, writes the sum (and the dropout mask)."""
    layer, tokens, h = spec.layer, spec.norm_tokens, spec.layer.d_model
    size = 3 * A * tokens * h + (A * h if layer.bias else 0) + (MASK_BYTES * tokens * h if layer.dropout else 0)
    return memory(name, size)


def residual_add_backward(spec: LayerSpec, name: str) -> list[Kernel]:
    """The branch's gradient: through the dropout mask, and the bias gradient (a column sum)."""
    layer, tokens, h = spec.layer, spec.norm_tokens, spec.layer.d_model
    kernels = []
    if layer.dropout:
        kernels.append(memory(f"{name}_dropout_backward", (2 * A + MASK_BYTES) * tokens * h))
    if layer.bias:
        kernels.append(memory(f"{name}_bias_grad", A * tokens * h + A * h))
    return kernels


def grad_sums(name: str, tokens: int, width: int, count: int) -> list[Kernel]:
    """`count` additions of two gradients of one tensor (autograd's accumulation: read 2, write 1)."""
    return [memory(name, 3 * A * tokens * width) for _ in range(count)]


def projections(name: str, tokens: int, widths: tuple[int, ...], d_in: int, split: bool,
                bias: bool = False) -> list[Kernel]:
    if split:
        return [gemm(f"{name}_{index}", tokens, width, d_in, bias=bias) for index, width in enumerate(widths)]
    return [gemm(name, tokens, sum(widths), d_in, bias=bias)]


def linear_backward(name: str, tokens: int, out_width: int, in_width: int) -> list[Kernel]:
    return [gemm(f"{name}_dgrad", tokens, in_width, out_width), gemm(f"{name}_wgrad", out_width, in_width, tokens)]


def projections_backward(name: str, tokens: int, widths: tuple[int, ...], d_in: int, split: bool) -> list[Kernel]:
    """Gradients of `projections`; split projections' input gradients are added up."""
    if not split:
        return linear_backward(name, tokens, sum(widths), d_in)
    kernels = [kernel for index, width in enumerate(widths)
               for kernel in linear_backward(f"{name}_{index}", tokens, width, d_in)]
    return kernels + grad_sums(f"{name}_dgrad_sum", tokens, d_in, len(widths) - 1)


def bias_grads(name: str, tokens: int, widths: tuple[int, ...], split: bool) -> list[Kernel]:
    """Column sums of the output gradients of biased projections (one per GEMM)."""
    parts = widths if split else (sum(widths),)
    return [memory(f"{name}_bias_grad", A * tokens * width + A * width) for width in parts]


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


def dense_mlp_backward(spec: LayerSpec) -> list[Kernel]:
    tokens, h, f = spec.tokens, spec.layer.d_model, spec.ffn
    widths = (f, f) if spec.layer.gated_mlp else (f,)
    biases = bias_grads("mlp_in", tokens, widths, spec.split) if spec.layer.bias else []
    return [*linear_backward("mlp_out", tokens, h, f), activation(spec, "activation", tokens, f, backward=True),
            *biases, *projections_backward("mlp_in", tokens, widths, h, spec.split)]


def tp_calls(spec: LayerSpec) -> list[Kernel]:
    """The host side of the layer's TP collectives: two all-reduces, or with SP two all-gathers
    and two reduce-scatters."""
    return host_calls("tensor_parallel_collective_call", (4 if spec.sp else 2) if spec.tp > 1 else 0)
