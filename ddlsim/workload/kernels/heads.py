"""The embedding and the output layer of a decoder as today's stacks run them (fused kernels,
as `fused.py`), for signatures with ``fused_runs``; Megatron's of 2021 are in `megatron.py`.

- embedding forward: one kernel gathers this rank's vocabulary rows (out-of-range ids masked),
  adds learned positions and draws the dropout mask where the model has them; backward: the
  gradient of the vocabulary slice (the rows' gradients added into a zeroed table or, for
  embeddings tied to the output layer on the same rank, into that layer's weight gradient, read
  and written once), and the position gradient (summed over the batch).
- output layer forward: the final norm, the logits GEMM, the fused cross-entropy (an online
  softmax over the 16-bit logits: one pass, or two over a vocabulary split over TP, the maximum
  and the sum of exponentials each all-reduced; it keeps the log-sum-exp); backward: the
  logits' gradient (the softmax recomputed from the logits and the log-sum-exp), the GEMM
  gradients and the norm's backward.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.types import Phase
from ddlsim.core.work import Kernel, KernelClass
from ddlsim.workload.kernels.parts import STAT_BYTES
from ddlsim.workload.kernels.primitives import A, gemm, memory
from ddlsim.workload.transformer.layer import MASK_BYTES

EMBEDDING, LOSS, NORM = KernelClass.EMBEDDING, KernelClass.LOSS, KernelClass.NORM
INDEX_BYTES = 8  # int64 token ids


@dataclass(frozen=True)
class HeadSpec:
    """One rank's share of the embedding or the output layer for one micro-batch."""

    d_model: int
    local_vocab: int
    seq_len: int  # this rank's tokens of one sequence (s / CP)
    batch: int
    tp: int = 1
    sp: bool = False
    positions: bool = False
    dropout: bool = False
    rmsnorm: bool = True
    tied: bool = False

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def norm_tokens(self) -> int:
        return self.tokens // self.tp if self.sp else self.tokens


def embedding_kernels(spec: HeadSpec, phase: Phase) -> list[Kernel]:
    tokens, h = spec.tokens, spec.d_model
    mask = MASK_BYTES * tokens * h if spec.dropout else 0
    positions = A * spec.seq_len * h if spec.positions else 0
    if phase is Phase.BACKWARD:
        # the vocabulary slice's gradient written once; tied to the output layer on this rank, that
        # layer's weight gradient is read and the rows' gradients added into it
        table = A * spec.local_vocab * h * (2 if spec.tied else 1)
        kernels = [memory("word_embedding_backward", A * tokens * h + INDEX_BYTES * tokens + mask + table,
                          kernel_class=EMBEDDING)]
        if spec.positions:
            kernels.append(memory("position_embedding_backward", A * tokens * h + positions, kernel_class=EMBEDDING))
        return kernels
    return [memory("embedding", 2 * A * tokens * h + INDEX_BYTES * tokens + positions + mask, kernel_class=EMBEDDING)]


def _final_norm(spec: HeadSpec, backward: bool) -> Kernel:
    """The final norm (as `parts.norm` and `parts.norm_backward`)."""
    tokens, h = spec.norm_tokens, spec.d_model
    count = 1 if spec.rmsnorm else 2
    weights = A * count * h
    size = (3 if backward else 2) * A * tokens * h + STAT_BYTES * count * tokens + (2 if backward else 1) * weights
    return memory("final_norm_backward" if backward else "final_norm", size, kernel_class=NORM)


def lm_head_kernels(spec: HeadSpec, phase: Phase) -> list[Kernel]:
    tokens, h, vocab = spec.tokens, spec.d_model, spec.local_vocab
    logits = float(tokens * vocab)
    if phase is Phase.BACKWARD:
        return [memory("cross_entropy_backward", 2 * A * logits + (INDEX_BYTES + STAT_BYTES) * tokens,
                       kernel_class=LOSS),
                gemm("logits_dgrad", tokens, h, vocab), gemm("logits_wgrad", vocab, h, tokens),
                _final_norm(spec, backward=True)]
    passes = 1 if spec.tp == 1 else 2
    return [_final_norm(spec, backward=False), gemm("logits", tokens, vocab, h),
            memory("cross_entropy", passes * A * logits + (INDEX_BYTES + STAT_BYTES) * tokens, launches=passes,
                   kernel_class=LOSS)]
