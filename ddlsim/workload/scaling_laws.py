"""Kaplan et al. 2020, "Scaling Laws for Neural Language Models" (arXiv:2001.08361).

Constants are the paper's fits (its Section 1.2 summary and Table 5/6), for WebText2,
cross-entropy in nats, non-embedding parameters N, tokens D and batches in tokens:

- Eq. (1.1)  L(N) = (N_c / N)^alpha_N,            alpha_N = 0.076, N_c = 8.8e13 parameters
- Eq. (1.4)  B_crit(L) = B_* / L^(1/alpha_B),     alpha_B = 0.21,  B_* = 2e8 tokens
- Eq. (1.6)  L(N, S_min) = (N_c/N)^alpha_N + (S_c/S_min)^alpha_S,  alpha_S = 0.76, S_c = 2.1e3 steps
- Eq. (5.4)  S_min(S) = S / (1 + B_crit(L)/B), i.e. S = S_min (1 + B_crit/B) at batch B
- Eq. (2.1)  N ~ 2 d_model n_layer (2 d_attn + d_ff) = 12 n_layer d_model^2 for d_ff = 4 d_model

Domain. Kaplan et al. fitted these laws on models of 768 to 1.5e9 non-embedding parameters
(Sec. 2 and 3), whose converged losses by Eq. (1.1) are 6.93 to 2.30 nats. RAMP (Sec. 7.2.1,
Table 9) extrapolates them down to 1.0 nats, where N = N_c = 8.8e13 parameters. ddlsim accepts
target losses from `MIN_TARGET_LOSS` (1.0, RAMP's extrapolation) to `MAX_TARGET_LOSS` (6.93,
Kaplan's smallest model) and refuses anything else with a `ConfigError` naming the domain: a
larger loss asks for a model smaller than any that was fitted (``target_loss=100`` would be a
model of a fraction of one parameter), a smaller one extrapolates beyond every use in the seed
papers. Below 2.30 the laws are an extrapolation; Kaplan et al. (Sec. 6.3) expect them to break
down near L* = 1.7 nats.

L(N) is the loss a model of N parameters converges to, so no finite run reaches it exactly.
We count the steps a model sized by Eq. (1.1) for the target loss needs to come within
``loss_gap x L`` of it: (S_c / S_min)^alpha_S = loss_gap x L in Eq. (1.6). The default gap is
alpha_N / alpha_S = 0.1, the distance from convergence at which Kaplan et al. find training
compute-efficient (Sec. 6 and Appendix B: stop at (1 + alpha_N/alpha_S) times the converged loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError

ALPHA_N = 0.076
N_C = 8.8e13
ALPHA_B = 0.21
B_STAR_TOKENS = 2e8
ALPHA_S = 0.76
S_C = 2.1e3
DEFAULT_LOSS_GAP = round(ALPHA_N / ALPHA_S, 12)  # 0.076 / 0.76 is 0.1; the division alone gives 0.09999999999999999
SMALLEST_FITTED_PARAMS = 768.0  # Kaplan et al., Sec. 2: models of 768 to 1.5e9 non-embedding parameters
LARGEST_FITTED_PARAMS = 1.5e9
MIN_TARGET_LOSS = 1.0  # RAMP Table 9's smallest loss: N = N_c
MAX_TARGET_LOSS = round((N_C / SMALLEST_FITTED_PARAMS) ** ALPHA_N, 2)  # 6.93
LOSS_DOMAIN_RULE = (f"must lie in the scaling laws' domain, {MIN_TARGET_LOSS:.1f} to {MAX_TARGET_LOSS:.2f} nats "
                    f"(Kaplan et al. 2020 fitted models of 768 to 1.5e9 parameters, losses {MAX_TARGET_LOSS:.2f} to "
                    f"{(N_C / LARGEST_FITTED_PARAMS) ** ALPHA_N:.2f}; RAMP extrapolates to {MIN_TARGET_LOSS:.1f})")


def _positive(key: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(key, value, "must be a finite positive number")


def check_target_loss(loss: float, key: str = "target_loss") -> None:
    """Raise `ConfigError` unless `loss` lies in the domain of the module docstring."""
    _positive(key, loss)
    if not MIN_TARGET_LOSS <= loss <= MAX_TARGET_LOSS:
        raise ConfigError(key, loss, LOSS_DOMAIN_RULE)


def params_for_loss(loss: float) -> float:
    """Non-embedding parameters whose converged loss is `loss` (Eq. 1.1 solved for N)."""
    _positive("target_loss", loss)
    return N_C * loss ** (-1.0 / ALPHA_N)


def loss_for_params(params: float) -> float:
    """Converged loss of a model with `params` non-embedding parameters (Eq. 1.1)."""
    _positive("params", params)
    return (N_C / params) ** ALPHA_N


def critical_batch_tokens(loss: float) -> float:
    """Critical batch size in tokens at loss `loss` (Eq. 1.4)."""
    _positive("loss", loss)
    return B_STAR_TOKENS * loss ** (-1.0 / ALPHA_B)


def min_steps(loss: float, loss_gap: float = DEFAULT_LOSS_GAP) -> float:
    """S_min: steps at B >> B_crit to come within `loss_gap` x `loss` of convergence (Eq. 1.6)."""
    _positive("loss", loss)
    _positive("loss_gap", loss_gap)
    return S_C * (loss_gap * loss) ** (-1.0 / ALPHA_S)


def steps_at_batch(s_min: float, batch_tokens: float, critical_tokens: float) -> float:
    """Steps at batch B given S_min: S = S_min (1 + B_crit / B) (Eq. 5.4 inverted)."""
    _positive("batch_tokens", batch_tokens)
    return s_min * (1.0 + critical_tokens / batch_tokens)


@dataclass(frozen=True)
class TrainingBudget:
    """What the scaling laws say about reaching `loss` with sequences of `seq_len` tokens."""

    loss: float
    seq_len: int
    loss_gap: float = DEFAULT_LOSS_GAP

    def __post_init__(self) -> None:
        check_target_loss(self.loss)
        _positive("loss_gap", self.loss_gap)
        if not isinstance(self.seq_len, int) or self.seq_len < 1:
            raise ConfigError("seq_len", self.seq_len, "must be an integer >= 1")

    @property
    def params(self) -> float:
        return params_for_loss(self.loss)

    @property
    def critical_batch_tokens(self) -> float:
        return critical_batch_tokens(self.loss)

    @property
    def critical_batch_sequences(self) -> int:
        """B_crit in sequences, rounded to the nearest whole sequence (at least 1)."""
        return max(1, round(self.critical_batch_tokens / self.seq_len))

    @property
    def min_steps(self) -> float:
        return min_steps(self.loss, self.loss_gap)

    def steps(self, global_batch_sequences: int) -> int:
        """Steps to the target at the global batch the partitioner picked (Eq. 5.4), rounded up."""
        tokens = global_batch_sequences * self.seq_len
        return math.ceil(steps_at_batch(self.min_steps, tokens, self.critical_batch_tokens))
