"""WRHT Section 4's numbers on ddlsim's optical ring, beside the paper's formulas.

- `wavelength_rows`: the channels first-fit routing and wavelength assignment gives each WRHT
  step (per direction) against the counts Section 4.1.2 derives;
- `budget_rows`: the largest group size m' that the optical budget of Eqs. 7-13 allows on N
  nodes with the ring's default device parameters, and the loss, margin, SNR and BER of the
  longest lightpath.

`python scripts/wrht_table1.py` prints both after `experiment=wrht_table1` (Table 1, Fig. 2).
Not imported by the package's ``__init__`` (it uses the WRHT algorithm, which imports the ring).
"""

from __future__ import annotations

from typing import Any

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.network.api import make_fabric
from ddlsim.network.collectives import wrht
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.fabrics.optical_ring import rwa
from ddlsim.network.fabrics.optical_ring.budget import max_communication_length, required_snr

WAVELENGTH_POINTS = ((1024, 129, 64), (1024, 9, 4), (2048, 129, 64), (4096, 129, 64))  # (N, m, w)
BUDGET_NODES = (128, 256, 512, 1024, 2048, 4096, 8192)


def wavelength_rows(points: tuple[tuple[int, int, int], ...] = WAVELENGTH_POINTS) -> list[dict[str, Any]]:
    """First-fit channels of each WRHT step against the paper's per-step counts."""
    rows = []
    for n, m, w in points:
        fabric = make_fabric("optical_ring", num_nodes=n, wavelengths=w, optical_constraints=False)
        algorithm = ALGORITHMS.make("wrht", m=m)
        request = ScheduleRequest.single_group("all_reduce", n, fabric)
        for index, stage in enumerate(algorithm.plan(request)):
            src, dst = stage.transfers()
            result = rwa.assign(src, dst, n)
            if stage.kind is wrht.StageKind.ALL_TO_ALL:
                paper = wrht.all_to_all_wavelengths(stage.members.size)
            else:
                paper = wrht.group_wavelengths(int(min(m, stage.members.size)))
            rows.append({"N": n, "m": m, "w": w, "step": index + 1, "kind": stage.kind.value,
                         "members": int(stage.members.size), "paper_wavelengths": paper,
                         "first_fit_cw": result.cw_channels, "first_fit_ccw": result.ccw_channels,
                         "longest_lightpath_hops": result.max_hops})
    return rows


def budget_rows(nodes: tuple[int, ...] = BUDGET_NODES) -> list[dict[str, Any]]:
    """m' of Eqs. 7-13 and the figures of the longest lightpath, per ring size."""
    fabric = make_fabric("optical_ring")
    budget = fabric.spec.budget
    rows: list[dict[str, Any]] = []
    for n in nodes:
        try:
            m_prime = budget.max_group_size(n)
        except InfeasibleError:
            rows.append({"N": n, "m_prime": "none", "eq7_L_max": "", "loss_db": "", "margin_db": "", "snr": "",
                         "ber": "", "routed_longest_hops": ""})
            continue
        length = max_communication_length(n, m_prime)
        plan = wrht.wrht_plan(n, m_prime, fabric.wavelengths)
        routed = max(rwa.assign(*stage.transfers(), n).max_hops for stage in plan)
        rows.append({"N": n, "m_prime": m_prime, "eq7_L_max": length,
                     "loss_db": round(budget.insertion_loss_db(length), 2),
                     "margin_db": round(budget.power_margin_db(length), 2), "snr": round(budget.snr(length), 1),
                     "ber": f"{budget.ber(length):.2e}", "routed_longest_hops": routed})
    return rows


def required_snr_text(target_ber: float = 1e-9) -> str:
    return f"BER {target_ber:g} needs SNR >= {required_snr(target_ber):.1f}"
