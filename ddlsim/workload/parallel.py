"""The parallel plan a user asks for: degrees to fix, or 0 to let the partitioner choose.

Degrees and how they compose (docs/workload.md, "Parallel plans"):

- ``tensor`` (TP), ``context`` (CP), ``data`` (DP) and ``pipeline`` (PP) multiply to the number
  of GPUs: ``gpus = tensor x context x data x pipeline``. Ranks are ordered as Megatron-Core
  orders them, TP fastest, then CP, then DP, then PP.
- ``expert`` (EP) does not multiply: for the expert layers it is carved out of the DP x CP ranks
  (Megatron-Core's convention, expert tensor parallel = TP), so it must divide data x context.
- ``virtual_stages`` splits each pipeline stage into that many model chunks (interleaved 1F1B).
- ``first_stage_layers`` / ``last_stage_layers`` (0: automatic) set the layers of the first and
  last pipeline stages, Megatron-Core's ``num_layers_in_first/last_pipeline_stage``; automatic is
  an even split where pipeline x virtual_stages divides the layers, else fewer layers on the first
  and last stages (`ddlsim/workload/transformer/stages.py`).
- ``zero`` shards optimizer states (1), gradients too (2) or parameters too (3, FSDP) over the
  data-parallel ranks (DP x CP for dense parameters, DP x CP / EP for expert parameters).
- ``main_grads_dtype``: the type of the gradient buffer the backward accumulates into and the
  data-parallel reduction reads (Megatron-Core's ``main_grad``): ``fp32``, ``bf16`` or ``fp16``;
  empty is Megatron-LM's default: fp32 for bf16 and fp32 training, the model's gradient-reduction
  type for fp16 (memory only: `ddlsim/workload/transformer/memory.py`).
- ``fsdp_copies`` (ZeRO 3): FSDP2's copy kernels, a copy-out after each parameter all-gather and a
  copy-in before each gradient reduce-scatter (`ddlsim/workload/kernels/fsdp.py`); on by default
  because FSDP2 runs them, false for a ZeRO 3 that gathers into and scatters out of the
  parameters and gradients themselves (the numbers before they were modelled).
- ``recompute``: ``none``, ``selective`` (the attention core, Korthikanti et al. 2022) or ``full``
  (every layer from its input). Empty means "follow ``activation_checkpointing``", the older key:
  true is ``full``, false is ``none``. When both are given they must agree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ddlsim.core.errors import ConfigError

RECOMPUTE_POLICIES = ("none", "selective", "full")
MAIN_GRADS_DTYPES = ("fp32", "bf16", "fp16")
ZERO_STAGES = (0, 1, 2, 3)
# The value each option has when a plan does not use it; a model that cannot honour an option
# rejects any other value (`reject_unsupported`).
NEUTRAL = {"tensor": (0, 1), "data": (0,), "pipeline": (1,), "context": (1,), "expert": (1,),
           "virtual_stages": (1,), "first_stage_layers": (0,), "last_stage_layers": (0,), "zero": (0,),
           "micro_batch": (0,), "gpus": (0,), "sequence_parallel": (False,), "activation_offload": (False,),
           "main_grads_dtype": ("",)}


@dataclass
class ParallelConfig:
    """Degrees of tensor, context, data, pipeline and expert parallelism, and the partitioner's limits.

    A tensor or data degree of 0 means "choose for me". `gpus` (0: not fixed) is the job's GPU
    count; tensor x context x data x pipeline must equal it, and data 0 is derived from it.
    `max_gpus` caps tensor x context x data x pipeline. `param_limit_per_gpu` is the
    parameters-per-GPU target of the tensor-parallel choice (RAMP 7.2.1 uses 1.6e9 for an 80 GB
    A100). `micro_batch` is the per-GPU (local) batch of one replica, 0 to fill memory (Megatron
    model) or 1 (GPT and HF decoders). `power_of_two` makes the data-parallel degree the
    partitioner chooses a power of two (tensor-parallel degrees always are).
    `activation_offload` keeps the activation checkpoints in host memory (RAMP 7.3), so only one
    layer's activations count against device memory; it needs full recompute.
    """

    tensor: int = 0
    data: int = 0
    pipeline: int = 1
    context: int = 1
    expert: int = 1
    virtual_stages: int = 1
    first_stage_layers: int = 0
    last_stage_layers: int = 0
    zero: int = 0
    micro_batch: int = 0
    gpus: int = 0
    max_gpus: int = 65536
    param_limit_per_gpu: float = 1.6e9
    sequence_parallel: bool = False
    recompute: str = ""
    activation_checkpointing: bool = True
    activation_offload: bool = False
    power_of_two: bool = True
    main_grads_dtype: str = ""
    fsdp_copies: bool = True

    def __post_init__(self) -> None:
        for key in ("tensor", "data", "micro_batch", "gpus", "first_stage_layers", "last_stage_layers"):
            if getattr(self, key) < 0:
                raise ConfigError(key, getattr(self, key), "must be >= 0 (0 lets the partitioner choose)")
        for key in ("pipeline", "context", "expert", "virtual_stages", "max_gpus"):
            if getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be >= 1")
        if self.zero not in ZERO_STAGES:
            raise ConfigError("zero", self.zero, "must be 0 (off), 1 (optimizer states), 2 (and gradients) or "
                                                 "3 (and parameters, FSDP)")
        if self.main_grads_dtype and self.main_grads_dtype not in MAIN_GRADS_DTYPES:
            raise ConfigError("main_grads_dtype", self.main_grads_dtype,
                              f"must be one of {', '.join(MAIN_GRADS_DTYPES)} (or empty: Megatron-LM's default)")
        if self.recompute and self.recompute not in RECOMPUTE_POLICIES:
            raise ConfigError("recompute", self.recompute, f"must be one of {', '.join(RECOMPUTE_POLICIES)} "
                                                           "(or empty to follow activation_checkpointing)")
        if self.recompute == "full" and not self.activation_checkpointing:
            raise ConfigError("recompute", self.recompute,
                              "contradicts activation_checkpointing = false; give one of the two keys")
        if not self.param_limit_per_gpu > 0:
            raise ConfigError("param_limit_per_gpu", self.param_limit_per_gpu, "must be positive")
        if self.activation_offload and self.recompute_policy != "full":
            raise ConfigError("activation_offload", self.activation_offload,
                              "offloads the checkpoints of full recompute, so it needs recompute = full "
                              "(activation_checkpointing = true)")
        if self.virtual_stages > 1 and self.pipeline == 1:
            raise ConfigError("virtual_stages", self.virtual_stages,
                              "interleaves the model chunks of pipeline stages, so it needs pipeline > 1")
        product = self.tensor_or_one * self.context * (self.data or 1) * self.pipeline
        if self.gpus:
            if self.gpus > self.max_gpus:
                raise ConfigError("gpus", self.gpus, f"exceeds max_gpus = {self.max_gpus}")
            if (self.data and self.tensor and product != self.gpus) or self.gpus % product:
                raise ConfigError("gpus", self.gpus, "must equal tensor x context x data x pipeline = "
                                                     f"{self._product_text()}")
        if product > self.max_gpus:
            raise ConfigError("max_gpus", self.max_gpus,
                              f"is smaller than tensor x context x data x pipeline = {product}")

    @property
    def tensor_or_one(self) -> int:
        return self.tensor or 1

    @property
    def recompute_policy(self) -> str:
        """``none``, ``selective`` or ``full``: `recompute` if given, else `activation_checkpointing`."""
        if self.recompute:
            return self.recompute
        return "full" if self.activation_checkpointing else "none"

    def _product_text(self) -> str:
        parts = [str(self.tensor or "auto"), str(self.context), str(self.data or "auto"), str(self.pipeline)]
        return " x ".join(parts)


def reject_unsupported(parallel: ParallelConfig, model: str, supported: tuple[str, ...] = (),
                       recompute: tuple[str, ...] = ()) -> None:
    """Raise `ConfigError` naming the first option of `parallel` that `model` cannot honour.

    Every option outside `supported` must hold its neutral value (`NEUTRAL`), and an explicit
    `recompute` must be one of `recompute`, so that nothing a user asks for is ignored silently.
    """
    for key, neutral in NEUTRAL.items():
        if key not in supported and getattr(parallel, key) not in neutral:
            raise ConfigError(f"parallel.{key}", getattr(parallel, key),
                              f"model {model} cannot honour it; leave it at {neutral[0]!r}")
    if parallel.recompute and parallel.recompute not in recompute:
        allowed = f"only recompute = {' or '.join(recompute)}" if recompute else "no activation recomputation"
        raise ConfigError("parallel.recompute", parallel.recompute, f"model {model} models {allowed}")


def with_legacy_checkpointing(parallel: ParallelConfig) -> ParallelConfig:
    """`parallel` with `activation_checkpointing` saying what `recompute` asks (full or none), for
    the partitioners that read the older key (Megatron encoders)."""
    if not parallel.recompute:
        return parallel
    return replace(parallel, recompute="", activation_checkpointing=parallel.recompute_policy == "full")
