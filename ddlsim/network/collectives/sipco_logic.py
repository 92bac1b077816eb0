"""SiPCO, the SiPAC co-designed collective (SiPAC Section V): the paper's logic as pure functions.

CUs are numbered 0..r^L - 1; digit l of a CU (``(cu // r**l) % r``) is its port on its level-l
wavelength-selective switch, and the CUs differing only in digit l share that switch.

Algorithm 1 (all-reduce) splits each message into C = r L chunks in L groups of r; chunk
``g r + k`` is chunk k of group g. Step 0: on every link l, the level-l neighbours
reduce-scatter group l (a CU keeps one chunk of the group). Steps 1..L-1: link l carries group
(s + l) mod L; the neighbours on that link hold the same chunk of it, partially reduced over
different CUs, and broadcast it to each other (the WSS broadcast) and reduce. Step L: link l
carries group l again, now fully reduced, and the neighbours all-gather it. L + 1 steps; every
link carries (r - 1) chunks of n / (r L) bytes per step, one per neighbour.

Which chunk of group g a CU keeps is fixed by Table III only for r = 2 (port 0 keeps chunk 1,
port 1 keeps chunk 0); ddlsim uses ``r - 1 - digit_g`` for every r.

`table2_terms` gives Table II's alpha-beta terms for ring, mesh, hierarchical ring and SiPCO.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError


def check_radix(r: int, levels: int) -> int:
    """Validate (r, L) and return the number of CUs r^L."""
    for key, value, low in (("r", r, 2), ("levels", levels, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(key, value, f"must be an integer >= {low}")
    return int(r) ** int(levels)


def digit(cu: np.ndarray | int, level: int, r: int) -> np.ndarray:
    return (np.asarray(cu, dtype=np.int64) // r ** level) % r


def neighbours(cu: np.ndarray | int, level: int, r: int) -> np.ndarray:
    """The r CUs on `cu`'s level-`level` switch (itself included), ordered by port: shape (..., r)."""
    cu = np.asarray(cu, dtype=np.int64)[..., None]
    ports = np.arange(r, dtype=np.int64)
    return cu + (ports - digit(cu, level, r)) * r ** level


def kept_chunk(cu: np.ndarray | int, group: int, r: int) -> np.ndarray:
    """Chunk index (0..rL-1) of group `group` that `cu` reduces and keeps (see the docstring)."""
    return group * r + (r - 1 - digit(cu, group, r))


@dataclass(frozen=True, eq=False)
class SipcoStep:
    """One step of Algorithm 1: rows (src, dst, chunk, level), `reduce` or copy at the receiver."""

    src: np.ndarray
    dst: np.ndarray
    chunk: np.ndarray
    level: np.ndarray
    reduce: bool
    multicast: bool


def all_reduce_steps(r: int, levels: int) -> list[SipcoStep]:
    """Algorithm 1 for p = r^L CUs, every transfer listed."""
    p = check_radix(r, levels)
    cus = np.arange(p, dtype=np.int64)
    steps = []
    for step in range(levels + 1):
        rows: list[tuple[np.ndarray, ...]] = []
        for link in range(levels):
            group = (step + link) % levels
            peers = neighbours(cus, link, r)  # (p, r)
            src = np.repeat(cus, r)
            dst = peers.ravel()
            # Step 0 sends each neighbour the chunk it keeps; later steps broadcast the sender's chunk.
            chunk = kept_chunk(dst if step == 0 else src, group, r)
            keep = src != dst
            rows.append((src[keep], dst[keep], chunk[keep], np.full(keep.sum(), link)))
        src, dst, chunk, level = (np.concatenate(parts) for parts in zip(*rows))
        steps.append(SipcoStep(src, dst, chunk, level, reduce=step < levels, multicast=step > 0))
    return steps


def contributors_after_each_step(r: int, levels: int) -> list[np.ndarray]:
    """Which CUs' data each chunk of each CU holds after each step: bool (steps + 1, p, rL, p).

    Entry 0 is the start (every CU holds only its own data in every chunk). A copy replaces
    the receiver's chunk; a reduction adds the sender's contributors to it.
    """
    p = check_radix(r, levels)
    state = np.zeros((p, r * levels, p), dtype=bool)
    state[np.arange(p), :, np.arange(p)] = True
    history = [state.copy()]
    for step in all_reduce_steps(r, levels):
        incoming = state[step.src, step.chunk]
        new = state.copy()
        if step.reduce:
            np.logical_or.at(new, (step.dst, step.chunk), incoming)
        else:
            new[step.dst, step.chunk] = incoming
        state = new
        history.append(state.copy())
    return history


def table2_terms(algorithm: str, p: int, size_bytes: float, alpha_s: float, beta_s_per_byte: float, *,
                 r: int | None = None, levels: int | None = None, k: int | None = None) -> tuple[float, float]:
    """(latency term, bandwidth term) in seconds of Table II for an all-reduce of n bytes on p CUs."""
    n = size_bytes
    if algorithm == "ring":
        return 2 * (p - 1) * alpha_s, 2 * (p - 1) / p * n * beta_s_per_byte
    if algorithm == "mesh":
        return 2 * alpha_s, 2 * (p - 1) / p * n * beta_s_per_byte
    if algorithm == "h_ring":
        if k is None or k < 1 or p % k:
            raise ConfigError("k", k, f"must divide p = {p} (CUs per group of the hierarchical ring)")
        hops = 4 * (k - 1) + 2 * (p // k - 1)
        return hops * alpha_s, hops / k * n * beta_s_per_byte
    if algorithm == "sipco":
        if r is None or levels is None or r ** levels != p:
            raise ConfigError("r", (r, levels), f"SiPCO needs r^L = p = {p}")
        return (levels + 1) * alpha_s, (levels + 1) * (r - 1) / (levels * r) * n * beta_s_per_byte
    raise ConfigError("algorithm", algorithm, "must be one of ring, mesh, h_ring, sipco")
