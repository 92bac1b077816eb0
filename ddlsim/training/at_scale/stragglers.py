"""A synchronous step waits for its slowest GPU: the expected maximum of N draws (order statistics).

GPUs of one product run at different speeds under the same load: Sinha et al., "Not All GPUs Are
Created Equal: Characterizing Variability in Large-Scale, Accelerator-Rich Systems" (SC'22,
arXiv:2208.11035v3) measured an average performance variation of 8 % (at most 22 %) between the
GPUs of each of five clusters of thousands of GPUs, for compute-, memory- and communication-bound
applications alike. Read as the spread from the slowest to the fastest GPU of a cluster of
thousands (about 6.5 standard deviations of a normal distribution at those sizes), that is a
standard deviation of speed of 8 % / 6.5 = 1.2 % per GPU (`SINHA_SIGMA`).

The default deviation, `SPEED_SIGMA` = 1.93 %, is fitted instead: on vTrain's measured runs,
Megatron-LM SC'21 Table 1 and Llama 3 Table 4 together (`ddlsim.validation.published`,
docs/validation.md), where each source left out is scored with the value the others give. The
sources disagree (fitted without one of them: 0.1-4.9 %): Table 1 alone wants about 5.9 %, the
other three 0.1-0.4 %. The fit is 1.6 times Sinha's figure: besides GPU-to-GPU variation it carries
whatever else makes a large synchronous job slower than its quiet-machine price and no other
model here prices (jitter, slow links, software), so `straggler_s` reads as "what scale costs
beyond the modelled costs".

Every GPU of a training job waits for every other at least once per iteration (the gradient
synchronisation couples the data-parallel replicas, pipeline stages and tensor-parallel peers
hand work to each other), so the iteration's compute and pipeline bubble stretch by
sigma x E[max of N standard normal draws], N the job's GPUs: 1.42 sigma for 8 GPUs, 3.55 sigma for
3,072, 3.97 sigma for 16,384.
"""

from __future__ import annotations

import math

from ddlsim.core.caches import PROCESS_CACHES

SINHA_SPREAD = 0.08  # Sinha et al. SC'22: average performance variation across a cluster's GPUs
SPREAD_IN_SIGMAS = 6.5  # max - min of thousands of normal draws, in standard deviations
SINHA_SIGMA = SINHA_SPREAD / SPREAD_IN_SIGMAS
SPEED_SIGMA = 0.0193  # fitted on the published runs (module docstring)


def expected_max_of_normals(count: int) -> float:
    """E[max of `count` independent standard normal draws] (0 for one draw), by quadrature of
    x n phi(x) Phi(x)^(n-1)."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if count == 1:
        return 0.0
    return PROCESS_CACHES.memo("expected maximum of normals", 4096).get_or_make(count, lambda: _quadrature(count))


def _quadrature(count: int) -> float:
    from scipy import integrate, stats  # imported here: scipy.stats alone costs a CLI start about 1.5 s


    def density(x: float) -> float:
        return x * count * stats.norm.pdf(x) * math.exp((count - 1) * stats.norm.logcdf(x))

    value, _ = integrate.quad(density, -10.0, 12.0, limit=200, epsabs=1e-12)
    return value


def straggler_s(paced_s: float, num_gpus: int, sigma: float = SPEED_SIGMA) -> float:
    """What waiting for the slowest of `num_gpus` costs an iteration whose compute and bubble
    (the time its GPUs' speed sets) is `paced_s`."""
    return paced_s * sigma * expected_max_of_normals(num_gpus)
