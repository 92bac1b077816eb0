"""Megatron-LM SC'21 Table 1 and Llama 3 Table 4 as ddlsim runs (`published`).

Megatron-LM (Narayanan et al., SC'21, Sec. 5.1 and Table 1): GPT models of 1.7B to 1T on Selene
(DGX A100 80 GB, NVLink/NVSwitch in a node, 8 x 200 Gb/s HDR InfiniBand per node: ddlsim's
``superpod`` fabric at its defaults), fp16 mixed precision, activation recomputation (the paper's
FLOP count, Eq. 3, includes it), the interleaved schedule with the scatter/gather optimisation,
sequence 2,048, vocabulary 51,200, tensor and pipeline degrees as the table gives them, the data
degree the rest. The A100 compute is ``compute=a100_megatron`` (fitted on vTrain's single-node
runs only). The table does not give the micro-batch size, the interleaving or the data-parallel
implementation; the authors' own scripts for it do (Megatron-LM repository,
``examples/sc21/run_table_1.sh``: ``MBS``, ``--num-layers-per-virtual-pipeline-stage`` and ``DDP``),
and ddlsim takes them from there (`SC21_SCRIPT_SETTINGS`): PyTorch's DDP (``DDP=torch``, the rows
without pipelining) overlaps the gradient all-reduce with backward in buckets; Megatron's own
``DDP=local`` reduces after backward. The measured iteration time is the paper's Eq. 3 FLOPs over
the achieved TFLOP/s of every GPU.

Llama 3 405B (Llama Team 2024, Sec. 3.3 and Table 4): 126 layers, bf16, H100 80 GB with 400 Gb/s
RoCE per GPU (``superpod`` with 400 Gb/s NICs and NVLink 4's 3.6 Tb/s a direction in a node),
TP 8, CP and DP as given, PP 16, micro-batch 1 (a DP group's batch of sequences is its
micro-batches), sequence parallelism, the data-parallel optimizer states sharded (ZeRO 1) and
their synchronisation overlapping backward (FSDP), no recomputation, four virtual stages per
pipeline stage (`LLAMA3_VIRTUAL_STAGES`, the setting issue 32 reported its figures with; Meta does not
state it; Meta's schedule is its own: it interleaves and takes one layer off the first and
the last stage, which ddlsim's uneven split does). ddlsim's Megatron-Core memory accounting puts
the interleaved stages over 80 GB without recomputation, so the memory check is waived. The
measured iteration time is ddlsim's model FLOPs over Meta's BF16 MFU of every GPU.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.model import ComputeConfig, ComputeModel
from ddlsim.core.registry import MODELS
from ddlsim.network.api import make_fabric
from ddlsim.training.at_scale.settings import AtScaleSettings
from ddlsim.training.run import train_on_fabric
from ddlsim.training.settings import Overlap, TrainingSettings
from ddlsim.validation import vtrain
from ddlsim.workload.models.gpt import GptConfig, GptModel
from ddlsim.workload.parallel import ParallelConfig

MEGATRON_SEQ_LEN, MEGATRON_VOCAB = 2048, 51200
# Table 1's rows as the authors ran them (Megatron-LM, examples/sc21/run_table_1.sh): parameters
# (billions) -> (micro-batch, virtual stages = layers per stage / layers per virtual stage, DDP).
SC21_SCRIPT_SETTINGS = {1.7: (16, 1, "torch"), 3.6: (16, 1, "torch"), 7.5: (16, 1, "torch"), 18.4: (8, 1, "torch"),
                        39.1: (4, 1, "local"), 76.1: (2, 3, "local"), 145.6: (2, 2, "local"),
                        310.1: (1, 2, "local"), 529.6: (1, 3, "local"), 1008.0: (1, 1, "local")}
LLAMA3_TOKENS_PER_BATCH = 16 * 2**20
LLAMA3_VIRTUAL_STAGES = 4
NO_MEMORY_LIMIT = 10**15


def megatron_flop(row: Any) -> float:
    """Megatron-LM SC'21 Eq. 3: 96 B s l h^2 (1 + s / 6h + V / 16lh), recomputation included."""
    b, s, layers, h = row.global_batch, MEGATRON_SEQ_LEN, row.layers, row.hidden_size
    return 96 * b * s * layers * h * h * (1 + s / (6 * h) + MEGATRON_VOCAB / (16 * layers * h))


def _result_row(result: Any, source: str, case: str, gpus: int, measured_s: float, settings: str) -> dict[str, Any]:
    """A row of `published.COLUMNS`: the time without stragglers, and their cost per unit of deviation."""
    stragglers = result.at_scale.straggler_s
    return {"source": source, "case": case, "gpus": gpus, "measured_s": measured_s,
            "base_s": result.iteration.iteration_time_s - stragglers,
            "unit_s": stragglers / result.settings.at_scale.speed_sigma, "settings": settings}


def megatron_rows(directory: Path, at_scale: AtScaleSettings) -> pd.DataFrame:
    table = pd.read_csv(directory / "megatron_sc21_table1.csv")
    device = DeviceSpec.from_config(DeviceConfig(name="a100_80gb"))
    compute = ComputeModel.from_config(vtrain.compute_config(), device)
    fabric, settings = make_fabric("superpod"), TrainingSettings(at_scale=at_scale)
    rows = []
    for row in table.itertuples(index=False):
        model = GptModel.from_config(GptConfig(d_model=int(row.hidden_size), heads=int(row.attention_heads),
                                               layers=int(row.layers), seq_len=MEGATRON_SEQ_LEN,
                                               vocab=MEGATRON_VOCAB, global_batch=int(row.global_batch)))
        tp, pp, gpus = int(row.tensor_parallel), int(row.pipeline_parallel), int(row.gpus)
        micro_batch, virtual, ddp = SC21_SCRIPT_SETTINGS[float(row.parameters_billion)]
        parallel = ParallelConfig(tensor=tp, pipeline=pp, data=gpus // (tp * pp), micro_batch=micro_batch,
                                  virtual_stages=virtual, recompute="full", max_gpus=gpus)
        overlap = Overlap.DP_BACKWARD if ddp == "torch" else Overlap.NONE
        result = train_on_fabric(model, parallel, device, compute, fabric, "best",
                                 dataclasses.replace(settings, overlap=overlap))
        measured = megatron_flop(row) / (row.achieved_tflops_per_gpu * 1e12 * gpus)
        rows.append(_result_row(result, "megatron_t1", f"{row.parameters_billion}B tp{tp} pp{pp}", gpus, measured,
                                f"micro-batch {micro_batch}, {virtual} virtual stages, DDP {ddp}"))
    return pd.DataFrame(rows)


def llama3_rows(directory: Path, at_scale: AtScaleSettings) -> pd.DataFrame:
    table = pd.read_csv(directory / "llama3_table4.csv")
    device = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
    unlimited = dataclasses.replace(device, memory_bytes=NO_MEMORY_LIMIT)  # the memory check waived
    compute = ComputeModel.from_config(ComputeConfig(), device)
    fabric = make_fabric("superpod", nic_bandwidth="400Gbps", node_bandwidth="3.6Tbps")
    settings = TrainingSettings(overlap=Overlap.DP_BACKWARD, at_scale=at_scale)
    rows = []
    for row in table.itertuples(index=False):
        seq = int(row.sequence_length)
        model = MODELS.make("hf", config="llama3_405b", precision="bf16", seq_len=seq,
                            global_batch=LLAMA3_TOKENS_PER_BATCH // seq)
        gpus = int(row.gpus)
        parallel = ParallelConfig(tensor=int(row.tensor_parallel), context=int(row.context_parallel),
                                  pipeline=int(row.pipeline_parallel), data=int(row.data_parallel), micro_batch=1,
                                  virtual_stages=LLAMA3_VIRTUAL_STAGES, zero=1, sequence_parallel=True,
                                  recompute="none", max_gpus=gpus)
        result = train_on_fabric(model, parallel, unlimited, compute, fabric, "best", settings)
        flop = float(result.workload.plan["model_flop_per_step"])
        measured = flop / (row.bf16_mfu_percent / 100 * device.peak("bf16") * gpus)
        rows.append(_result_row(result, "llama3_t4", f"405B {gpus} GPUs cp{row.context_parallel}", gpus, measured,
                                f"micro-batch 1, {LLAMA3_VIRTUAL_STAGES} virtual stages, no recompute, ZeRO 1, "
                                "memory check waived"))
    return pd.DataFrame(rows)
