"""RAMP-x communication subgroups per algorithmic step (RAMP 6.1.1, Tables 5 and 6).

A node has coordinates (g, j, lam): communication group, rack and node number, in a job that
uses x groups, J racks and Lambda node numbers (x must divide Lambda: a rack's nodes form
Lambda / x device groups of x nodes, dg = lam // x, i = lam % x). Every step partitions the
nodes into subgroups that exchange data directly:

step 1: same rack and node number, every group (x members);
step 2: same rack and device group, sequential node numbers across groups (x members);
step 3: same node number, one member per rack (J members);
step 4: same rack and position in the device group, one member per device group (Lambda / x).

Two step-4 formulations exist. The paper prints formulas that are not all mutually
consistent (see docs/ramp.md, "Subgroup formulas"); ddlsim uses, per formulation, the
consistent set closest to print:

- formulation 2 ("mesh", the default): Tables 5/6 exactly as printed for steps 1-4; the
  step-4 members exchange directly. Its information map is Table 7 with the term
  floor(lam/x) j replaced by floor(lam/x).
- formulation 1 ("ring"): step 4 links device group dg to dg + 1 with the group shifted by the
  rack index (Table 6 row 4.1), so that different racks use different subnets and every
  transceiver can be used; it runs as a ring (one-to-one). Its information map is Table 7
  exactly as printed, which is constant on step-3 subgroups only if step 3 keeps
  (g - j (1 + dg)) mod x rather than the printed (g - j) mod x: ddlsim uses that.

Everything here is vectorised over arrays of nodes.
"""

from __future__ import annotations

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.network.int_arrays import floor_mod

STEPS = (1, 2, 3, 4)
FORMULATIONS = (1, 2)


def check_dims(x: int, racks: int, wavelengths: int) -> int:
    """Validate job dimensions and return the number of device groups Lambda / x."""
    for key, value in (("x", x), ("racks", racks), ("wavelengths", wavelengths)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ConfigError(key, value, "must be an integer >= 1")
    if wavelengths % x:
        raise ConfigError("wavelengths", wavelengths, f"must be a multiple of x = {x} (device groups of x nodes)")
    return wavelengths // x


def check_formulation(formulation: int) -> int:
    if formulation not in FORMULATIONS:
        raise ConfigError("formulation", formulation, "must be 1 (ring step 4) or 2 (mesh step 4)")
    return int(formulation)


def subgroup_size(step: int, x: int, racks: int, wavelengths: int) -> int:
    """#NS of Table 5: x, x, J, Lambda / x."""
    device_groups = check_dims(x, racks, wavelengths)
    return {1: x, 2: x, 3: racks, 4: device_groups}[step]


def num_subgroups(step: int, x: int, racks: int, wavelengths: int) -> int:
    """#SG of Table 5: Lambda J, Lambda J, Lambda x, J x^2."""
    check_dims(x, racks, wavelengths)
    return {1: wavelengths * racks, 2: wavelengths * racks, 3: wavelengths * x, 4: racks * x * x}[step]


def _rack_shift(formulation: int, dg: np.ndarray) -> np.ndarray:
    """How far the group moves per rack in step 3: 1 (print, formulation 2) or 1 + dg (formulation 1)."""
    return 1 + dg if formulation == 1 else np.ones_like(dg)


def subgroup_id(step: int, formulation: int, g: np.ndarray, j: np.ndarray, lam: np.ndarray,
                x: int, racks: int, wavelengths: int) -> np.ndarray:
    """Table 5: the id of the subgroup each node belongs to at `step` (0 <= id < #SG)."""
    check_dims(x, racks, wavelengths)
    formulation = check_formulation(formulation)
    g, j, lam = (np.asarray(v, dtype=np.int64) for v in (g, j, lam))
    dg, i = lam // x, floor_mod(lam, x)
    if step == 1:
        return lam + wavelengths * j
    if step == 2:
        return floor_mod(lam - g, x) + wavelengths * j + dg * x
    if step == 3:
        # Print: (lam + Lambda (j - g)) mod (Lambda j); read as mod (Lambda x), the #SG of Table 5.
        return lam + wavelengths * floor_mod(g - j * _rack_shift(formulation, dg), x)
    if step == 4:
        if formulation == 1:
            return i + x * x * j + floor_mod(g - j * dg, x) * x
        return x * x * j + x * floor_mod(g - dg, x) + i
    raise ConfigError("step", step, "must be 1, 2, 3 or 4")


def members(step: int, formulation: int, g: np.ndarray, j: np.ndarray, lam: np.ndarray,
            x: int, racks: int, wavelengths: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Table 6: coordinates of every member of each node's subgroup, shape (nodes, #NS).

    Column gamma follows Table 6's variable: member (g + gamma) for steps 1-2, rack gamma for
    step 3, device group gamma for formulation 2's step 4, and for formulation 1's step 4 the
    ring order starting at the node itself (column 1 is Table 6 row 4.1's successor).
    """
    device_groups = check_dims(x, racks, wavelengths)
    formulation = check_formulation(formulation)
    g, j, lam = (np.asarray(v, dtype=np.int64)[:, None] for v in (g, j, lam))
    dg, i = lam // x, floor_mod(lam, x)
    if step in (1, 2):
        gamma = np.arange(x, dtype=np.int64)[None, :]
        new_g = floor_mod(g + gamma, x)
        new_lam = lam + 0 * gamma if step == 1 else floor_mod(i + gamma, x) + x * dg
        return new_g, j + 0 * gamma, new_lam
    if step == 3:
        gamma = np.arange(racks, dtype=np.int64)[None, :]
        new_g = floor_mod(g + (gamma - j) * _rack_shift(formulation, dg), x)
        return new_g, gamma + 0 * g, lam + 0 * gamma
    if step == 4:
        gamma = np.arange(device_groups, dtype=np.int64)[None, :]
        if formulation == 1:
            # Ring successor (Table 6, 4.1): (g + j) and dg + 1, wrapping to (g + j - D j) at the end.
            new_dg = floor_mod(dg + gamma, device_groups)
            new_g = floor_mod(g + j * (new_dg - dg), x)
        else:
            new_dg = gamma + 0 * dg
            new_g = floor_mod(g - dg + gamma, x)
        return new_g, j + 0 * gamma, i + x * new_dg
    raise ConfigError("step", step, "must be 1, 2, 3 or 4")


def table6_member_printed(step: str, g: int, j: int, lam: int, gamma: int, x: int, racks: int,
                          wavelengths: int) -> tuple[int, int, int]:
    """One member exactly as Table 6 prints it (steps "1", "2", "3", "4.1", "4.2"), for tests.

    In row 4.1 the bracket [(dg + 1) / (Lambda / x)] is read as integer division (1 only in the
    last device group); row 4.2's gamma runs over the Lambda / x device groups.
    """
    d = wavelengths // x
    dg = lam // x
    if step == "1":
        return (g + gamma) % x, j, lam
    if step == "2":
        return (g + gamma) % x, j, (lam % x + gamma) % x + x * dg
    if step == "3":
        return ((g - j) % x + gamma) % x, ((j + gamma) % racks - j) % racks, lam
    if step == "4.1":
        wrap = (dg + 1) // d
        return (g + j - wrap * (dg + 1) * j) % x, j, lam % x + x * ((dg + 1) % d)
    if step == "4.2":
        return ((g - dg) % x + gamma) % x, j, lam % x + x * (((gamma + dg) % d - dg) % d)
    raise ConfigError("step", step, "must be one of 1, 2, 3, 4.1, 4.2")
