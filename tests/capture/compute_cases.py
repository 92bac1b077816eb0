"""Capture-vs-analytic compute of the same model (issue 24's first acceptance row): the programs,
the analytic workloads, and both sides' compute time per layer, per kernel class and per
iteration, priced by the same kernel roofline (`ddlsim.compute.kernel_roofline`).

The programs run on one rank (no parallelism: the layer's kernels are what is compared) in the
training precision of each model, with full activation recompute when asked (transformers'
gradient checkpointing, non-reentrant, without early stop: the whole layer again, as Megatron's
full recompute; the Megatron GPT's own). The transformers models run the
kernels a production stack runs (`fused_ops.py`: fused RMSNorm, SwiGLU and cross-entropy,
GPT-2's GeLU as one kernel; flash attention through SDPA; Mixtral's experts through
``torch._grouped_mm``) and Megatron's mixed-precision optimizer (Adam on fp32 master weights,
after a gradient-norm clip); the vTrain GPT program (`examples/megatron_gpt`) has its own.
Per layer is what one more layer adds to the capture (two captures, L and L + 1 layers) and to
the analytic workload, outside the optimizer; per iteration is everything.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from functools import partial

import torch
from fused_ops import IGNORE, cross_entropy, productionize

import ddlsim
from ddlsim.capture.fusion import fuse_events
from ddlsim.capture.graph import OP_KEY_COLUMNS
from ddlsim.capture.pricing import kernel_of, precision_of
from ddlsim.capture.records import COMPUTE
from ddlsim.capture.simulation import simulate_program
from ddlsim.compute.kernel_registry import kernels_for
from ddlsim.compute.kernel_roofline import kernel_time_s
from ddlsim.compute.options import build_compute
from ddlsim.core import registry
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ComputeTask
from ddlsim.network.api import make_fabric
from ddlsim.workload.models.gpt import GptConfig, GptModel
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.hf_config import decoder_shape, load_config
from ddlsim.workload.transformer.workload import build_decoder_workload

LAYER_PHASES = ("forward", "recompute", "backward")
HF_CLASSES = {"llama": "LlamaConfig", "qwen2": "Qwen2Config", "mixtral": "MixtralConfig", "gpt2": "GPT2Config"}
GIB = 2**30


@dataclass(frozen=True)
class Model:
    """A model both front doors build: a shipped HF config, or the vTrain GPT (`model=gpt`)."""

    name: str
    config: str = ""  # shipped HF shape; "" for the vTrain GPT
    gpt: dict = dataclasses.field(default_factory=dict)  # GptConfig fields of the vTrain GPT
    device: str = "h100_sxm"
    compute: str = "roofline"


@dataclass
class Side:
    """Compute of one front door: seconds per phase (device and host) and per kernel class."""

    device_s: dict = dataclasses.field(default_factory=lambda: defaultdict(float))
    host_s: dict = dataclasses.field(default_factory=lambda: defaultdict(float))
    by_class_s: dict = dataclasses.field(default_factory=lambda: defaultdict(float))

    def layer_s(self) -> float:
        """Forward, recompute and backward, each the larger of its device and host time."""
        return sum(max(self.device_s[phase], self.host_s[phase]) for phase in LAYER_PHASES)

    def minus(self, other: Side) -> Side:
        result = Side()
        for mine, theirs, out in ((self.device_s, other.device_s, result.device_s),
                                  (self.host_s, other.host_s, result.host_s),
                                  (self.by_class_s, other.by_class_s, result.by_class_s)):
            for key in set(mine) | set(theirs):
                out[key] = mine[key] - theirs[key]
        return result


# ---- programs ---------------------------------------------------------------------------------
def hf_config(model: Model, seq: int, layers: int) -> dict:
    """The shipped config cut to `layers` layers, as the program and the analytic shape read it."""
    config = {key: value for key, value in load_config(model.config).items() if not key.startswith("_")}
    config.pop("architectures", None)
    if config["model_type"] == "gpt2":
        # Learned positions for the sequence; attention dropout off so that the CPU capture runs the
        # flash kernel (a GPU runs dropout inside it, at no extra traffic); residual and embedding
        # dropout as GPT-2 trains.
        config.update(n_layer=layers, n_positions=max(seq, config["n_positions"]), attn_pdrop=0.0,
                      resid_pdrop=0.1, embd_pdrop=0.1)
    else:
        config.update(num_hidden_layers=layers, max_position_embeddings=max(seq, config["max_position_embeddings"]))
    return config


class MasterAdam(torch.optim.Adam):
    """Megatron's mixed-precision optimizer around Adam: the global norm of the 16-bit gradients,
    all-reduced over the model-parallel group (here of one rank), clips them; Adam runs on fp32
    master weights (the gradients cast to fp32 on the way) and writes the 16-bit weights back."""

    def __init__(self, params: list[torch.Tensor]) -> None:
        self.model_params = params
        super().__init__([p.detach().float() for p in params], lr=1e-4, foreach=True)

    @torch.no_grad()
    def step(self, closure=None):
        master = self.param_groups[0]["params"]
        grads = [p.grad for p in self.model_params]
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)).float())
        torch.distributed.all_reduce(norm)
        scale = torch.clamp(1.0 / (norm + 1e-6), max=1.0)
        for m, grad in zip(master, grads, strict=True):
            m.grad = grad.float()
        torch._foreach_mul_([m.grad for m in master], scale)
        super().step(closure)
        torch._foreach_copy_(self.model_params, master)
        for m, p in zip(master, self.model_params, strict=True):
            m.grad = p.grad = None


def hf_build(mesh, *, config: dict, seq: int, recompute: bool):
    """A transformers decoder from `config` with the production kernels of `fused_ops`, trained
    one step on one sequence of `seq` tokens."""
    import transformers

    settings = {key: value for key, value in config.items() if key != "model_type"}
    hf = getattr(transformers, HF_CLASSES[config["model_type"]])(**settings, use_cache=False)
    if config["model_type"] == "mixtral":
        hf._experts_implementation = "grouped_mm"
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = productionize(transformers.AutoModelForCausalLM.from_config(hf, attn_implementation="sdpa"))
    finally:
        torch.set_default_dtype(previous)
    if recompute:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    optimizer = MasterAdam(list(model.parameters()))
    tokens = torch.randint(0, hf.vocab_size, (1, seq))
    labels = torch.nn.functional.pad(tokens[:, 1:], (0, 1), value=IGNORE)

    def step() -> None:
        with torch.utils.checkpoint.set_checkpoint_early_stop(False):  # recompute whole layers, as Megatron
            logits = model(input_ids=tokens).logits
        cross_entropy(logits, labels)[0].backward()
        optimizer.step()

    return step


def capture(model: Model, seq: int, layers: int, recompute: bool):
    if model.config:
        build = partial(hf_build, config=hf_config(model, seq, layers), seq=seq, recompute=recompute)
        return ddlsim.capture(build, (1,), ("dp",))
    from examples.megatron_gpt import make_build

    build = make_build(**model.gpt, layers=layers, seq_len=seq, micro_batch=1, checkpointing=recompute)
    return ddlsim.capture(build, (1, 1, 1), ("pp", "dp", "tp"))


# ---- analytic workloads -----------------------------------------------------------------------
def analytic(model: Model, seq: int, layers: int, recompute: bool):
    parallel = ParallelConfig(tensor=1, data=1, micro_batch=1, recompute="full" if recompute else "none")
    if model.config:
        shape = decoder_shape(hf_config(model, seq, layers), seq_len=seq)
        return build_decoder_workload(model.name, shape, parallel, 10**15, global_batch=1, num_steps=0,
                                      precision=Precision.BF16, grad_precision=Precision.BF16)
    gpt = GptModel.from_config(GptConfig(**model.gpt, layers=layers, seq_len=seq, global_batch=1))
    return gpt.build_workload(parallel, 10**15)


# ---- pricing ----------------------------------------------------------------------------------
def pricing(model: Model):
    device = registry.build("device", model.device)
    return device, build_compute(model.compute, device)


def analytic_side(workload, device, compute) -> tuple[Side, float, float]:
    """(per-phase and per-class compute, iteration compute time, its optimizer step's) of one
    micro-batch on one stage."""
    side, total, optimizer = Side(), 0.0, 0.0
    roofline = compute.roofline
    peak_of = {}
    for block in workload.blocks:
        for task in block.tasks:
            if not isinstance(task, ComputeTask):
                continue
            repeat = block.repeat * task.count
            time_s = repeat * compute.estimate(task).time_s
            total += time_s
            optimizer += time_s if task.phase is Phase.OPTIMIZER else 0.0
            kernels = kernels_for(task.signature, task.phase)
            precision = Precision(task.signature.precision)
            peak = peak_of.setdefault(precision, device.peak(precision))
            phase = task.phase.value if task.phase is not Phase.OPTIMIZER else "optimizer"
            for kernel in kernels:
                time_s = kernel_time_s(kernel, peak, device.memory_bandwidth_bytes_per_s, roofline.kernel)
                side.device_s[phase] += repeat * time_s
                side.host_s[phase] += repeat * kernel.launches * roofline.kernel.host_s_per_launch
                side.by_class_s[f"{phase}:{kernel.kernel_class.value}"] += repeat * time_s
    return side, total, optimizer


def capture_side(program, device, compute) -> tuple[Side, float, float]:
    side, roofline = Side(), compute.roofline
    events = fuse_events(program.events) if compute.fusion else program.events
    rows = events[(events.kind == COMPUTE) & (events["rank"] == program.ranks[0])]
    for row in rows.itertuples():
        key = tuple(getattr(row, column) for column in OP_KEY_COLUMNS)
        kernel = kernel_of(key)
        peak = device.peak(precision_of(row.dtype))
        time_s = kernel_time_s(kernel, peak, device.memory_bandwidth_bytes_per_s, roofline.kernel)
        side.device_s[row.phase] += time_s
        side.host_s[row.phase] += roofline.kernel.host_s_per_launch
        side.by_class_s[f"{row.phase}:{kernel.kernel_class.value}"] += time_s
    result = simulate_program(program, make_fabric("ideal"), "ring", device, compute, check_memory=False)
    optimizer = sum(op.duration_s for op in result.graph.ops
                    if isinstance(op.task, ComputeTask) and op.task.phase is Phase.OPTIMIZER)
    return side, result.iteration.compute_time_s, optimizer


@dataclass(frozen=True)
class Comparison:
    layer_capture_s: float
    layer_analytic_s: float
    iteration_capture_s: float
    iteration_analytic_s: float
    optimizer_capture_s: float
    optimizer_analytic_s: float
    layer_by_class: dict  # "phase:class" -> (capture s, analytic s)

    @property
    def layer_error(self) -> float:
        return self.layer_analytic_s / self.layer_capture_s - 1

    @property
    def iteration_error(self) -> float:
        return self.iteration_analytic_s / self.iteration_capture_s - 1

    @property
    def step_error(self) -> float:
        """The iteration without its optimizer step (forward, backward, recompute of every layer,
        the embedding and the output layer)."""
        return (self.iteration_analytic_s - self.optimizer_analytic_s) / \
            (self.iteration_capture_s - self.optimizer_capture_s) - 1

    def table(self) -> str:
        lines = [f"{'phase:class':32s} {'capture us':>11s} {'analytic us':>11s}"]
        for key, (captured, modelled) in sorted(self.layer_by_class.items()):
            lines.append(f"{key:32s} {captured * 1e6:11.1f} {modelled * 1e6:11.1f}")
        lines.append(f"layer: capture {self.layer_capture_s * 1e3:.3f} ms, analytic {self.layer_analytic_s * 1e3:.3f} "
                     f"ms ({100 * self.layer_error:+.2f} %); iteration: capture {self.iteration_capture_s * 1e3:.3f} "
                     f"ms, analytic {self.iteration_analytic_s * 1e3:.3f} ms ({100 * self.iteration_error:+.2f} %), of "
                     f"which the optimizer step: capture {self.optimizer_capture_s * 1e3:.3f} ms, analytic "
                     f"{self.optimizer_analytic_s * 1e3:.3f} ms; without it {100 * self.step_error:+.2f} %")
        return "\n".join(lines)


def compare(model: Model, seq: int, recompute: bool, layers: int = 2) -> Comparison:
    device, compute = pricing(model)
    captured = [capture_side(capture(model, seq, count, recompute), device, compute) for count in (layers - 1, layers)]
    modelled = [analytic_side(analytic(model, seq, count, recompute), device, compute)
                for count in (layers - 1, layers)]
    capture_layer = captured[1][0].minus(captured[0][0])
    analytic_layer = modelled[1][0].minus(modelled[0][0])
    classes = {key: (capture_layer.by_class_s.get(key, 0.0), analytic_layer.by_class_s.get(key, 0.0))
               for key in set(capture_layer.by_class_s) | set(analytic_layer.by_class_s)
               if not key.startswith("optimizer")}
    return Comparison(capture_layer.layer_s(), analytic_layer.layer_s(), captured[1][1], modelled[1][1],
                      captured[1][2], modelled[1][2],
                      {key: value for key, value in classes.items() if max(map(abs, value)) > 1e-9})
