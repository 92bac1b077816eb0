"""RAMP-x information map (RAMP 6.1.2, Table 7) and the collective rank it defines.

At step s a node keeps (reduce-scatter) or contributes (all-gather) the portion numbered
`info_portion(s)` of the message its subgroup shares. Members of a step-s subgroup agree on
the portions of steps before s and hold distinct portions at step s, so the portions of the
four steps, read as mixed-radix digits (x, x, J, Lambda / x), give every node a unique rank:
"the decimal representation of the information value at all algorithmic steps represents the
rank of each node in the collective".

Table 7 as printed is consistent with formulation 1's subgroups (see `subgroups`); for
formulation 2 the term floor(lam/x) j becomes floor(lam/x). `table7_printed` keeps the
printed formulas for tests that show the difference.
"""

from __future__ import annotations

import numpy as np

from ddlsim.network.collectives.rampx.subgroups import check_dims, check_formulation
from ddlsim.network.int_arrays import floor_mod


def table7_printed(step: int, g: np.ndarray, j: np.ndarray, lam: np.ndarray, x: int) -> np.ndarray:
    """Table 7 exactly as printed."""
    g, j, lam = (np.asarray(v, dtype=np.int64) for v in (g, j, lam))
    dg = lam // x
    return _portion(step, g, j, lam, dg, dg * j, x)


def info_portion(step: int, formulation: int, g: np.ndarray, j: np.ndarray, lam: np.ndarray,
                 x: int, racks: int, wavelengths: int) -> np.ndarray:
    """The portion (0 <= value < #NS of the step) a node handles at `step`."""
    check_dims(x, racks, wavelengths)
    if check_formulation(formulation) == 1:
        return table7_printed(step, g, j, lam, x)
    g, j, lam = (np.asarray(v, dtype=np.int64) for v in (g, j, lam))
    dg = lam // x
    return _portion(step, g, j, lam, dg, dg, x)


def _portion(step: int, g: np.ndarray, j: np.ndarray, lam: np.ndarray, dg: np.ndarray, shift: np.ndarray,
             x: int) -> np.ndarray:
    """Table 7's portion of `step`, with the step-1/2 group shift (dg j as printed, dg for formulation 2)."""
    if step == 1:
        return floor_mod(g - lam - j - shift, x)
    if step == 2:
        return floor_mod(g - j - shift, x)
    return {3: j, 4: dg}[step]


def collective_rank(formulation: int, g: np.ndarray, j: np.ndarray, lam: np.ndarray,
                    x: int, racks: int, wavelengths: int) -> np.ndarray:
    """Rank of each node: the portions of steps 1-4 as digits of radix (x, x, J, Lambda / x)."""
    device_groups = check_dims(x, racks, wavelengths)
    digits = [info_portion(step, formulation, g, j, lam, x, racks, wavelengths) for step in (1, 2, 3, 4)]
    return ((digits[0] * x + digits[1]) * racks + digits[2]) * device_groups + digits[3]
