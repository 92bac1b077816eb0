"""Where each parallel group sits in the job: Megatron-Core's rank order, and the plan's rules.

Rank order (Megatron-Core's default ``tp-cp-ep-dp-pp``, expert tensor parallel = TP): tensor
parallel fastest, then context parallel, then data parallel, then pipeline stage,

    rank = tp_rank + TP x (cp_rank + CP x (dp_rank + DP x stage)),

so a TP group is TP consecutive ranks (inside a node when TP <= GPUs per node), a pipeline stage
is TP x CP x DP consecutive ranks, and

=====================  ===========================================  ====================================
group                  `GroupLayout(size, stride, num_ranks)`        used by
=====================  ===========================================  ====================================
tensor                 (TP, 1, R)                                    TP/SP collectives, vocab-parallel
context                (CP, TP, R)                                   ring attention (K/V passes)
data x context         (DP x CP, TP, R)                              gradients of dense parameters, ZeRO
expert                 (EP, TP, R)                                   MoE dispatch/combine all-to-alls
expert data            (DP x CP / EP, TP x EP, R)                    gradients of expert parameters
pipeline neighbours    (2, R, 2 R)                                   stage-to-stage send/recv
pipeline               (PP, R, N)                                    gradient-norm and found-inf sync
=====================  ===========================================  ====================================

with R = TP x CP x DP ranks per stage and N = R x PP GPUs. EP is carved out of the DP x CP
ranks of a stage for the expert layers (Megatron-Core): the EP index runs fastest after TP, so
an EP group is EP neighbours along the DP x CP dimension, and EP must divide DP x CP. Context
ranks hold the same parameters as their data-parallel peers, so dense gradients are reduced
(and ZeRO shards taken) over DP x CP. A ring-attention pass sends each rank's K/V chunk to its
CP neighbour; it is priced as all neighbour pairs of one step at once, ``(2, TP, 2 TP x
floor(CP x DP / 2))``.

Every collective of a stage is described by the groups of one stage (num_ranks R); all stages
run their own copies at the same time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import GroupLayout
from ddlsim.workload.transformer.shape import DecoderShape
from ddlsim.workload.transformer.stages import split_layers


@dataclass(frozen=True)
class ParallelLayout:
    """The degrees of one plan: TP, CP, DP, PP, EP and virtual stages per pipeline stage."""

    tp: int
    cp: int
    dp: int
    pp: int
    ep: int = 1
    vp: int = 1
    chunk_layers: tuple[int, ...] = ()  # layers of every model chunk (`stages.split_layers`); () = even

    def layers_of_chunks(self, layers: int) -> tuple[int, ...]:
        """Layers of every model chunk, in chunk order (stage c mod PP runs chunk c)."""
        return self.chunk_layers or split_layers(layers, self.pp, self.vp)

    @property
    def stage_ranks(self) -> int:
        return self.tp * self.cp * self.dp

    @property
    def num_gpus(self) -> int:
        return self.stage_ranks * self.pp

    @property
    def chunks(self) -> int:
        """Model chunks (virtual stages) of the whole pipeline: PP x virtual stages."""
        return self.pp * self.vp

    @property
    def dense_dp(self) -> int:
        """Ranks that hold the same dense parameters: DP x CP."""
        return self.dp * self.cp

    @property
    def expert_dp(self) -> int:
        """Ranks that hold the same experts: DP x CP / EP."""
        return self.dp * self.cp // self.ep

    def tensor(self) -> GroupLayout:
        return GroupLayout(self.tp, 1, self.stage_ranks)

    def context(self) -> GroupLayout:
        return GroupLayout(self.cp, self.tp, self.stage_ranks)

    def context_pairs(self) -> GroupLayout:
        return GroupLayout(2, self.tp, 2 * self.tp * (self.cp * self.dp // 2))

    def data(self) -> GroupLayout:
        return GroupLayout(self.dense_dp, self.tp, self.stage_ranks)

    def expert(self) -> GroupLayout:
        return GroupLayout(self.ep, self.tp, self.stage_ranks)

    def expert_data(self) -> GroupLayout:
        return GroupLayout(self.expert_dp, self.tp * self.ep, self.stage_ranks)

    def pipeline_pair(self) -> GroupLayout:
        return GroupLayout(2, self.stage_ranks, 2 * self.stage_ranks)

    def pipeline(self) -> GroupLayout:
        return GroupLayout(self.pp, self.stage_ranks, self.num_gpus)

    def stage_of(self, chunk: int) -> int:
        """The pipeline stage that runs model chunk `chunk` (chunk c runs on stage c mod PP)."""
        return chunk % self.pp


def tp_divides(shape: DecoderShape, tp: int) -> bool:
    """True when `tp` splits heads, KV heads and every MLP width into whole parts."""
    layer, moe = shape.layer, shape.moe
    widths = [layer.heads, shape.kv_heads]
    if moe is None or shape.dense_layers:
        widths.append(layer.ffn_hidden)
    if moe is not None:
        widths += [moe.expert_ffn] + ([moe.shared_ffn] if moe.shared_ffn else [])
    return all(width % tp == 0 for width in widths)


def check_layout(shape: DecoderShape, layout: ParallelLayout, *, sequence_parallel: bool) -> None:
    """Raise `ConfigError` naming the rule a plan breaks (docs/workload.md lists them)."""
    layer, moe, t = shape.layer, shape.moe, layout.tp
    if layer.heads % t or shape.kv_heads % t:
        raise ConfigError("parallel.tensor", t, f"must divide the {layer.heads} attention heads and the "
                                                f"{shape.kv_heads} KV heads")
    if not tp_divides(shape, t):
        raise ConfigError("parallel.tensor", t, "must divide every MLP width (ffn "
                                                f"{layer.ffn_hidden}{_moe_widths(shape)})")
    check_context_and_expert(shape, layout.cp, layout.ep)
    if layout.dense_dp % layout.ep:
        raise ConfigError("parallel.expert", layout.ep,
                          f"is carved out of the data x context ranks (Megatron-Core), so it must divide "
                          f"data x context = {layout.dp} x {layout.cp}")
    if moe is not None and t > 1 and not sequence_parallel:
        raise ConfigError("parallel.sequence_parallel", False,
                          "must be true for an MoE model with tensor parallelism (Megatron-Core requires it)")
    if layout.chunk_layers and (len(layout.chunk_layers) != layout.chunks or sum(layout.chunk_layers) != shape.layers):
        raise ConfigError("chunk_layers", layout.chunk_layers, f"must give {layout.chunks} model chunks holding the "
                                                               f"{shape.layers} layers")
    layout.layers_of_chunks(shape.layers)


def check_context_and_expert(shape: DecoderShape, context: int, expert: int) -> None:
    """The rules on the context and expert degrees that hold whatever the other degrees are, checked
    before the tensor-parallel degree is chosen, so that an error names the degree that broke them."""
    seq_len, moe = shape.layer.seq_len, shape.moe
    if seq_len % (2 * context) and context > 1:
        raise ConfigError("parallel.context", context,
                          f"must divide the sequence of {seq_len} tokens into 2 x context equal chunks "
                          "(Megatron's causal load balancing gives each rank two)")
    if moe is None and expert > 1:
        raise ConfigError("parallel.expert", expert, "the model is dense (no experts); expert must be 1")
    if moe is not None and moe.experts % expert:
        raise ConfigError("parallel.expert", expert, f"must divide the {moe.experts} experts")


def check_chunks(shape: DecoderShape, pipeline: int, virtual_stages: int, first: int = 0, last: int = 0
                 ) -> tuple[int, ...]:
    """The layers of every model chunk (`stages.py`: Megatron-Core's even, first/last-stage or
    embedding/loss-accounted splits); `ConfigError` naming the key when none applies."""
    return split_layers(shape.layers, pipeline, virtual_stages, first, last)


def check_micro_batches(layout: ParallelLayout, micro_batches: int) -> None:
    if layout.vp > 1 and micro_batches % layout.pp:
        raise ConfigError("parallel.virtual_stages", layout.vp,
                          f"the interleaved schedule needs the micro-batches per replica ({micro_batches}) to be "
                          f"a multiple of pipeline = {layout.pp} (Megatron's rule)")


def _moe_widths(shape: DecoderShape) -> str:
    if shape.moe is None:
        return ""
    shared = f", shared {shape.moe.shared_ffn}" if shape.moe.shared_ffn else ""
    return f", expert {shape.moe.expert_ffn}{shared}"
