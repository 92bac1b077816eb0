"""`model=topoopt`: the six models of TopoOpt (Wang et al., NSDI 2023) Appendix D, List 1, with
the sizes of its Sec. 5.3 simulations, as per-iteration compute tasks and collective calls.

List 1 gives layer counts, widths and per-GPU batches; the parallelization is FlexFlow's search
in the paper, which ddlsim does not reproduce. We use the strategies TopoOpt reports as typical
(Sec. 5.1, App. D): embedding tables model parallel (whole tables on GPUs, the all-to-all traffic
of Sec. 5.4) with data-parallel MLPs for DLRM and NCF; pure data parallelism for CANDLE, BERT,
ResNet-50 and VGG-16. Servers hold `gpus_per_server` GPUs (4 A100s in the paper); every GPU is
a rank. Training runs in fp32 (FlexFlow's default).

Where List 1 is silent we say what we assume: DLRM's dense input has 13 features (Criteo's
count, as in the DLRM reference); CANDLE's input is as wide as its feature layers; BERT's
"Embed. size 512" is not modelled (the transformer layers carry the compute and gradients).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout, Phase, Precision
from ddlsim.core.work import ComputeTask, TaskBlock, Workload
from ddlsim.workload.dlrm_arch import DlrmShape, mlp_matmul_params, mlp_params
from ddlsim.workload.dlrm_partition import partition_dlrm
from ddlsim.workload.dlrm_tasks import dlrm_blocks, dlrm_plan_fields
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.ncf import NcfShape, NcfShard
from ddlsim.workload.parallel import ParallelConfig, reject_unsupported
from ddlsim.workload.shard_signatures import image_signature, mlp_signature
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.megatron2021_plan import Megatron2021Model
from ddlsim.workload.transformer.stack import TransformerStack
from ddlsim.workload.transformer.workload import build_megatron2021_workload

TOPOOPT_MODELS = ("dlrm", "candle", "bert", "ncf", "resnet50", "vgg16")
BATCH_PER_GPU = {"dlrm": 128, "candle": 256, "bert": 16, "ncf": 128, "resnet50": 128, "vgg16": 64}
SGD_STATE_BYTES_PER_PARAM = 12  # fp32 weights, gradients and momentum
SGD_FLOP_PER_PARAM = 3.0
SGD_BYTES_PER_PARAM = 20.0  # read gradient, read/write weight and momentum

DLRM = DlrmShape(num_tables=64, rows=10**7, embedding_dim=128, dense_features=13, hidden=4096, bottom_layers=16,
                 top_layers=8, top_hidden=2048)
NCF = NcfShape(mf_tables=32, mlp_tables=32, rows=10**6, mf_dim=64, mlp_dim=128, hidden=4096, layers=8)
CANDLE_WIDTH, CANDLE_LAYERS = 16384, 8 + 16
BERT = TransformerStack(LayerShape(1024, 16, 64), 12)
# List 1's Sec. 5.6 sizes (the shared cluster of Fig. 16), where they differ from Sec. 5.3's:
# DLRM 16 tables of 256 wide, dense layers 8 x 1024, dense feature layers 16 x 2048, batch 256;
# CANDLE 4096 wide; BERT 6 blocks, hidden 768, sequence 256, 6 heads. VGG16 keeps batch 64.
SIZES = ("sec5_3", "sec5_6")
SEC5_6_DLRM = DlrmShape(num_tables=16, rows=10**7, embedding_dim=256, dense_features=13, hidden=2048,
                        bottom_layers=16, top_layers=8, top_hidden=1024)
SEC5_6_CANDLE_WIDTH = 4096
SEC5_6_BERT = TransformerStack(LayerShape(768, 6, 256), 6)
SEC5_6_BATCH_PER_GPU = {**BATCH_PER_GPU, "dlrm": 256}


@dataclass
class TopoOptModelConfig:
    """One model of TopoOpt List 1 (Sec. 5.3 sizes); `batch_per_gpu` 0 takes List 1's; `num_tables`
    0 takes List 1's 64 DLRM tables (Sec. 5.4 uses 128, one per server). `sizes` ``sec5_6`` takes
    List 1's Sec. 5.6 sizes (the shared cluster of Fig. 16) for DLRM, CANDLE and BERT."""

    name: str = "topoopt"
    model: str = "resnet50"
    num_servers: int = 128
    gpus_per_server: int = 4
    batch_per_gpu: int = 0
    precision: str = "fp32"
    num_tables: int = 0
    sizes: str = "sec5_3"


@MODELS.register("topoopt", TopoOptModelConfig)
@dataclass(frozen=True)
class TopoOptModel:
    """DLRM, CANDLE, BERT, NCF, ResNet-50 or VGG-16 as TopoOpt's Sec. 5.3 simulates them."""

    model: str
    num_gpus: int
    batch: int
    precision: Precision
    name: str = "topoopt"
    num_tables: int = 0
    sizes: str = "sec5_3"

    @classmethod
    def from_config(cls, config: TopoOptModelConfig) -> TopoOptModel:
        if config.model not in TOPOOPT_MODELS:
            raise ConfigError("model", config.model, f"must be one of {', '.join(TOPOOPT_MODELS)}")
        for key in ("num_servers", "gpus_per_server"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        if config.batch_per_gpu < 0:
            raise ConfigError("batch_per_gpu", config.batch_per_gpu, "must be >= 0 (0 takes List 1's)")
        if config.num_tables < 0 or (config.num_tables and config.model != "dlrm"):
            raise ConfigError("num_tables", config.num_tables, "must be >= 0, and set only for model=dlrm")
        if config.sizes not in SIZES:
            raise ConfigError("sizes", config.sizes, f"must be one of {', '.join(SIZES)}")
        precision = parse_precision(config.precision)
        batches = SEC5_6_BATCH_PER_GPU if config.sizes == "sec5_6" else BATCH_PER_GPU
        batch = config.batch_per_gpu or batches[config.model]
        return cls(config.model, config.num_servers * config.gpus_per_server, batch, precision, config.name,
                   config.num_tables, config.sizes)

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        reject_unsupported(parallel, f"topoopt ({self.model})", ("data", "gpus", "micro_batch", "tensor"))
        for key in ("data", "gpus"):
            if getattr(parallel, key) not in (0, self.num_gpus):
                raise ConfigError(f"parallel.{key}", getattr(parallel, key),
                                  f"TopoOpt's {self.model} runs data parallel on model.num_servers x "
                                  f"model.gpus_per_server = {self.num_gpus} GPUs; give {self.num_gpus} or 0")
        if parallel.tensor > 1:
            raise ConfigError("parallel.tensor", parallel.tensor, f"TopoOpt's {self.model} has no tensor "
                                                                  "parallelism here; give 0 or 1")
        if parallel.micro_batch and parallel.micro_batch != self.batch:
            return replace(self, batch=parallel.micro_batch).build_workload(replace(parallel, micro_batch=0),
                                                                           memory_bytes)
        if self.num_gpus > parallel.max_gpus:
            raise InfeasibleError(f"TopoOpt {self.model} asks for {self.num_gpus} GPUs but max_gpus = "
                                  f"{parallel.max_gpus}")
        name = f"topoopt:{self.model}"
        if self.model == "dlrm":
            base = SEC5_6_DLRM if self.sizes == "sec5_6" else DLRM
            shape = replace(base, num_tables=self.num_tables) if self.num_tables else base
            plan = partition_dlrm(shape, self.num_gpus, memory_bytes, local_batch=self.batch, sharding="table_wise",
                                  value_bytes=self.precision.bytes_per_element)
            fields = {**dlrm_plan_fields(plan), "precision": self.precision.value}
            return Workload(name, self.num_gpus, dlrm_blocks(plan, self.precision), plan.global_batch, 0, fields)
        if self.model == "ncf":
            return self._ncf(name, memory_bytes)
        if self.model == "bert":
            fixed = ParallelConfig(tensor=1, data=self.num_gpus, micro_batch=self.batch, max_gpus=self.num_gpus,
                                   activation_checkpointing=False, param_limit_per_gpu=float("inf"))
            stack = SEC5_6_BERT if self.sizes == "sec5_6" else BERT
            workload = build_megatron2021_workload(name, Megatron2021Model(stack), None, fixed, memory_bytes,
                                               global_batch=self.batch * self.num_gpus, precision=self.precision)
            return workload
        if self.model == "candle":
            width = SEC5_6_CANDLE_WIDTH if self.sizes == "sec5_6" else CANDLE_WIDTH
            dims = [width] * (CANDLE_LAYERS + 1) + [1]
            signature = mlp_signature(width, width, CANDLE_LAYERS, 1, self.batch, self.precision.value)
            return self._data_parallel(name, signature, mlp_params(dims), 2.0 * mlp_matmul_params(dims), memory_bytes)
        from ddlsim.workload.vision import architecture_params, forward_flop_per_sample  # counted with torch

        signature = image_signature(self.model, self.batch, self.precision.value)
        return self._data_parallel(name, signature, architecture_params(self.model),
                                   forward_flop_per_sample(self.model), memory_bytes)

    def _data_parallel(self, name: str, signature, params: int, flop_per_sample: float,
                       memory_bytes: int) -> Workload:
        states = SGD_STATE_BYTES_PER_PARAM * params
        if states > memory_bytes:
            raise InfeasibleError(f"TopoOpt {self.model}: {params:,} parameters need {states:,} bytes of weights, "
                                  f"gradients and momentum, more than the {memory_bytes:,} bytes of one GPU")
        weight_bytes = self.precision.bytes_per_element * params
        forward = ComputeTask("forward", Phase.FORWARD, signature, flop_per_sample * self.batch, 2.0 * weight_bytes)
        backward = ComputeTask("backward", Phase.BACKWARD, signature, 2 * flop_per_sample * self.batch,
                               4.0 * weight_bytes)
        optimizer = ComputeTask("optimizer_step", Phase.OPTIMIZER, signature, SGD_FLOP_PER_PARAM * params,
                                SGD_BYTES_PER_PARAM * params)
        blocks = [TaskBlock("forward", (forward,)), TaskBlock("backward", (backward,))]
        if self.num_gpus > 1:
            blocks.append(TaskBlock("gradient_all_reduce", (CollectiveCall(
                CollectiveOp.ALL_REDUCE, weight_bytes, GroupLayout(self.num_gpus), Phase.BACKWARD,
                "dp_gradient_all_reduce"),)))
        blocks.append(TaskBlock("optimizer", (optimizer,)))
        fields = {"params_total": params, "params_per_gpu": params, "tp_degree": 1, "dp_degree": self.num_gpus,
                  "pp_degree": 1, "num_gpus": self.num_gpus, "local_batch": self.batch,
                  "global_batch": self.batch * self.num_gpus, "num_steps": 0,
                  "dp_message_bytes": weight_bytes if self.num_gpus > 1 else 0, "tp_message_bytes": 0,
                  "memory_per_gpu_bytes": states, "precision": self.precision.value}
        return Workload(name, self.num_gpus, tuple(blocks), self.batch * self.num_gpus, 0, fields)

    def _ncf(self, name: str, memory_bytes: int) -> Workload:
        shard = NcfShard(NCF, self.num_gpus)
        value_bytes = self.precision.bytes_per_element
        embedding_bytes = value_bytes * shard.embedding_params()
        states = embedding_bytes + SGD_STATE_BYTES_PER_PARAM * NCF.dense_params()
        if states > memory_bytes:
            raise InfeasibleError(f"TopoOpt ncf: the busiest GPU's tables and MLP states need {states:,} bytes, "
                                  f"more than the {memory_bytes:,} bytes of one GPU")
        signature = shard.signature(self.batch, self.precision.value)
        a2a = value_bytes * max(shard.pooled_elements(self.batch), shard.received_elements(self.batch))
        everyone = GroupLayout(self.num_gpus)
        flop = shard.forward_flop(self.batch)
        forward = [ComputeTask("ncf_forward", Phase.FORWARD, signature, flop, 2.0 * a2a)]
        backward = [ComputeTask("ncf_backward", Phase.BACKWARD, signature, 2 * flop, 4.0 * a2a)]
        blocks = []
        if self.num_gpus > 1:
            forward.append(CollectiveCall(CollectiveOp.ALL_TO_ALL, a2a, everyone, Phase.FORWARD,
                                          "pooled_embedding_all_to_all"))
            backward.insert(0, CollectiveCall(CollectiveOp.ALL_TO_ALL, a2a, everyone, Phase.BACKWARD,
                                              "embedding_gradient_all_to_all"))
        blocks += [TaskBlock("forward", tuple(forward)), TaskBlock("backward", tuple(backward))]
        dense_bytes = value_bytes * NCF.dense_params()
        if self.num_gpus > 1:
            blocks.append(TaskBlock("gradient_all_reduce", (CollectiveCall(
                CollectiveOp.ALL_REDUCE, dense_bytes, everyone, Phase.BACKWARD, "dp_dense_gradient_all_reduce"),)))
        blocks.append(TaskBlock("optimizer", (ComputeTask("ncf_optimizer", Phase.OPTIMIZER, signature,
                                                          SGD_FLOP_PER_PARAM * NCF.dense_params(),
                                                          SGD_BYTES_PER_PARAM * NCF.dense_params()),)))
        fields = {"params_total": NCF.params(), "params_per_gpu": shard.params(), "tp_degree": 1,
                  "dp_degree": self.num_gpus, "pp_degree": 1, "num_gpus": self.num_gpus, "local_batch": self.batch,
                  "global_batch": self.batch * self.num_gpus, "num_steps": 0,
                  "dp_message_bytes": dense_bytes if self.num_gpus > 1 else 0,
                  "tp_message_bytes": a2a if self.num_gpus > 1 else 0, "all_to_all_bytes": a2a,
                  "memory_per_gpu_bytes": states, "embedding_sharding": "table_wise", "precision": self.precision.value}
        return Workload(name, self.num_gpus, tuple(blocks), self.batch * self.num_gpus, 0, fields)
