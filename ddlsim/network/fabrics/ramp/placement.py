"""Placing a job on RAMP so that RAMP-x needs as few algorithmic steps as possible (RAMP 7.4).

A job of n ranks runs as an equivalent RAMP of x' groups, J' racks and Lambda' node numbers
(RAMP 6.3: "equivalent RAMP architecture parameters in terms of used communication groups,
racks and node numbers") with x' J' Lambda' = n, x' <= x, J' <= J, Lambda' <= Lambda and
x' | Lambda' (device groups). Steps 1 and 2 are active when x' > 1, step 3 when J' > 1 and
step 4 when Lambda' / x' > 1, so the dimensions minimising the active steps are chosen. A
subgroup may not have more members than a node has transceiver groups plus one (every peer
needs a transceiver group in the same slots). Ties go to more groups (more subnets), then to
fewer racks: nodes with the same number in different racks share a wavelength in every
broadcast-and-select subnet, so spreading a job over node numbers rather than racks avoids
wavelength contention. Jobs whose size has no such factorisation
(e.g. a prime above Lambda) cannot run RAMP-x; they are placed node after node.

The job occupies groups [0, x'), racks [0, J') and node numbers [0, Lambda'), ranks filling that
box node number first, then rack, then group (``r = (g J' + j) Lambda' + lam``), so that
consecutive ranks (a tensor-parallel group) share a rack. RAMP-x finds the box again from the
placement and builds its subgroups on the physical coordinates.

``placement=contention_aware`` (beyond the paper) instead spreads jobs and their sub-groups over
communication groups. RAMP 7.4 places for the fewest steps because the paper's estimator assumes
ideal switching; ddlsim's transcoder does not, and traffic inside one communication group can only
use the subnets from that group to itself (x of the x^2), so a 512-rank group in one
communication group takes 7x longer for its all-reduce than in a box over 16 groups. This
placement (1) takes, among the legal boxes, the one whose RAMP-x all-reduce the transcoder prices
fastest (chosen by `ddlsim.network.collectives.rampx.box_choice.cheapest_box` and handed to the
fabric) and (2) numbers ranks so that every aligned block of consecutive ranks (a tensor-parallel
group) is itself a box over as many groups as its size allows: the rank's digits alternate between
node-number and group digits (one prime factor each, node number first, so that x' divides
Lambda' in every block), then the remaining node-number digits, then the rack.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ddlsim.core.errors import InfeasibleError
from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.int_arrays import all_distinct


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def active_steps(x: int, racks: int, wavelengths: int) -> int:
    """Number of RAMP-x algorithmic steps with communication for these job dimensions."""
    return 2 * (x > 1) + (racks > 1) + (wavelengths // x > 1)


PLACEMENTS = ("fewest_steps", "contention_aware")


def legal_shapes(num_ranks: int, x: int, racks: int, wavelengths: int) -> list[tuple[int, int, int]]:
    """Every (x', J', Lambda') box RAMP-x can run `num_ranks` ranks in on a RAMP of these dimensions."""
    shapes = []
    for x_job in _divisors(num_ranks):
        if x_job > x:
            break
        rest = num_ranks // x_job
        for racks_job in _divisors(rest):
            if racks_job > racks:
                break
            lam_job = rest // racks_job
            if lam_job > wavelengths or lam_job % x_job:
                continue
            if max(x_job, racks_job, lam_job // x_job) > x + 1:
                continue
            shapes.append((x_job, racks_job, lam_job))
    return shapes


@lru_cache(maxsize=1024)
def job_dims(num_ranks: int, x: int, racks: int, wavelengths: int) -> tuple[int, int, int] | None:
    """(x', J', Lambda') with the fewest active steps for `num_ranks` ranks (RAMP 7.4), or None."""
    shapes = legal_shapes(num_ranks, x, racks, wavelengths)
    if not shapes:
        return None
    return min(shapes, key=lambda shape: (active_steps(*shape), -shape[0], shape[1]))


def rampx_unsupported_reason(num_ranks: int, dims: RampDims) -> str | None:
    """None if RAMP-x can run `num_ranks` ranks on `dims`, else a sentence saying why not."""
    if num_ranks > dims.num_nodes:
        return f"{num_ranks} ranks exceed the {dims.num_nodes} nodes of this RAMP"
    if job_dims(num_ranks, dims.x, dims.racks, dims.wavelengths) is None:
        return (f"{num_ranks} ranks cannot be arranged as x' groups x J' racks x Lambda' node numbers with "
                f"x' <= {dims.x}, J' <= {dims.racks}, Lambda' <= {dims.wavelengths} and x' dividing Lambda'")
    return None


def place_job(num_ranks: int, dims: RampDims, placement: str = "fewest_steps",
              shape: tuple[int, int, int] | None = None) -> np.ndarray:
    """Fabric node of every job rank (the RAMP-x box when one exists, else nodes in order).

    `shape` is the box (default: `job_dims`'s); `placement` the rank order inside it."""
    if num_ranks > dims.num_nodes:
        raise InfeasibleError(f"{num_ranks} ranks do not fit on RAMP, which has {dims.num_nodes} nodes "
                              f"({num_ranks - dims.num_nodes} too many)")
    shape = shape or job_dims(num_ranks, dims.x, dims.racks, dims.wavelengths)
    if shape is None:
        return np.arange(num_ranks, dtype=np.int64)
    x_job, racks_job, lam_job = shape
    ranks = np.arange(num_ranks, dtype=np.int64)
    if placement == "contention_aware":
        g, j, lam = interleaved_coords(ranks, x_job, lam_job)
    else:
        lam = ranks % lam_job
        g, j = np.divmod(ranks // lam_job, racks_job)
    return dims.node_id(g, j, lam)


def _primes(n: int) -> list[int]:
    """Prime factors of `n` in ascending order, with repetition (n is at most a RAMP's size)."""
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


def interleaved_coords(ranks: np.ndarray, x_job: int, lam_job: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, rack, node number) of `ranks` in a box with digits alternating node number / group.

    One digit per prime factor of x' (node number first, then group), then the node-number
    factors left of Lambda' / x', then the rack: an aligned block of consecutive ranks spans
    as many groups as it can while its groups still divide its node numbers."""
    g_primes = _primes(x_job)
    digits = [(axis, p) for p in g_primes for axis in ("lam", "g")]
    digits += [("lam", p) for p in _primes(lam_job // x_job)]
    coords = {"lam": np.zeros_like(ranks), "g": np.zeros_like(ranks)}
    scale = {"lam": 1, "g": 1}
    rest = ranks.copy()
    for axis, p in digits:
        rest, digit = np.divmod(rest, p)
        coords[axis] = coords[axis] + digit * scale[axis]
        scale[axis] *= p
    return coords["g"], rest, coords["lam"]


def find_box(nodes: np.ndarray, dims: RampDims) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
    """((g0, j0, lam0), (x', J', Lambda')) if `nodes` are exactly a box of the fabric, else None."""
    g, j, lam = dims.coords(nodes)
    low = (int(g.min()), int(j.min()), int(lam.min()))
    shape = (int(g.max()) - low[0] + 1, int(j.max()) - low[1] + 1, int(lam.max()) - low[2] + 1)
    if shape[0] * shape[1] * shape[2] != nodes.size or not all_distinct(nodes):
        return None
    return low, shape
