"""The OPSquare paper's statements about its Figs. 2 and 3, checked against a measured sweep.

The paper publishes its results as plots only; its text states the numbers below (Section 3 and
the abstract). Each check computes our counterpart from the sweep's rows and says whether it
agrees within the stated tolerance, or `None` when the sweep lacks the points to judge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

US = 1e-6


@dataclass(frozen=True)
class ClaimCheck:
    figure: str
    claim: str
    paper: str
    measured: str
    agrees: bool | None

    def as_row(self) -> dict[str, object]:
        return dict(self.__dict__)


def _frame(rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> pd.DataFrame:
    return rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


def _us(value: float) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value / US:.3g} us"


Check = Callable[[pd.DataFrame, pd.DataFrame], ClaimCheck]


def _ideal_until_06(ops: pd.DataFrame, _: pd.DataFrame) -> ClaimCheck:
    low = ops[ops.load <= 0.6 + 1e-9]
    ratio = float((low.throughput / low.load).min()) if len(low) else math.nan
    return ClaimCheck("Fig. 2a", "OPSquare throughput almost ideal up to load 0.6 (all localities)",
                      "throughput = load", f"min throughput/load = {ratio:.3f}",
                      None if math.isnan(ratio) else ratio >= 0.95)


def _no_loss_below_06(ops: pd.DataFrame, _: pd.DataFrame) -> ClaimCheck:
    low = ops[ops.load < 0.6 - 1e-9]
    worst = float(low.loss_ratio.max()) if len(low) else math.nan
    return ClaimCheck("Fig. 2b", "OPSquare: zero packet loss below load 0.6", "0",
                      f"max loss ratio = {worst:.3g}", None if math.isnan(worst) else worst == 0)


def _saturation_outgoing(ops: pd.DataFrame, _: pd.DataFrame) -> ClaimCheck:
    claim = "OPSquare saturation with all traffic inter-pod (the inter-pod channel limits it)"
    outgoing = ops[ops.locality == 0]
    if not len(outgoing) or outgoing.load.max() < 0.7:
        return ClaimCheck("Fig. 2a", claim, "about 0.6 (abstract)", "n/a (needs locality 0, load >= 0.7)", None)
    saturation = float(outgoing.throughput.max())
    return ClaimCheck("Fig. 2a", claim, "about 0.6 (abstract)", f"max throughput {saturation:.3f}",
                      0.55 <= saturation <= 0.65)


def _local_within(ops: pd.DataFrame, _: pd.DataFrame) -> ClaimCheck:
    worst = float(ops.latency_local_max_s.max()) if len(ops) else math.nan
    return ClaimCheck("Fig. 2c", "OPSquare intra-pod packets delivered within 0.5 us", "<= 0.5 us",
                      f"max {_us(worst)}", None if math.isnan(worst) else worst <= 0.5 * US)


def _remote_within(ops: pd.DataFrame, _: pd.DataFrame) -> ClaimCheck:
    worst = float(ops.latency_remote_max_s.max()) if len(ops) else math.nan
    return ClaimCheck("Fig. 2c", "OPSquare inter-pod packets delivered within 6 us", "<= 6 us",
                      f"max {_us(worst)}", None if math.isnan(worst) else worst <= 6 * US)


def _scaling_penalty(ops: pd.DataFrame, _: pd.DataFrame) -> ClaimCheck:
    pivot = ops.pivot_table(index=["locality", "load"], columns="num_nodes", values="latency_mean_s")
    if not {256, 1024} <= set(pivot.columns):
        return ClaimCheck("Fig. 2c", "OPSquare 256 -> 1,024 nodes worsens latency by less than 1 us", "< 1 us",
                          "n/a (needs both scales)", None)
    worst = float((pivot[1024] - pivot[256]).max())
    return ClaimCheck("Fig. 2c", "OPSquare 256 -> 1,024 nodes worsens latency by less than 1 us", "< 1 us",
                      f"max increase {_us(worst)}", worst < 1 * US)


def _half_capacity(_: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    best = ls.groupby("locality").throughput.max() if len(ls) else pd.Series(dtype=float)
    has = {0.33, 0.67} <= set(best.index)
    text = ", ".join(f"{loc:g}: {value:.3f}" for loc, value in best.items())
    return ClaimCheck("Fig. 3a", "leaf-spine per-node throughput exceeds 0.5 only with 2/3 local traffic",
                      "max < 0.5 at 33% local, > 0.5 at 67%", f"max by locality {text}" if text else "n/a",
                      bool(best[0.33] < 0.5 < best[0.67]) if has else None)


def _loss_step(_: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    third = ls[ls.locality == 0.33]
    lossy = third[third.loss_ratio > 1e-3].load
    onset = float(lossy.min()) if len(lossy) else math.nan
    shown = "no loss up to load " + f"{third.load.max():g}" if len(third) and math.isnan(onset) else f"{onset:g}"
    return ClaimCheck("Fig. 3b", "leaf-spine loss steps up at 33% local traffic (spine buffer)", "from load 0.8",
                      f"first load with loss > 0.1%: {shown}" if len(third) else "n/a",
                      None if not len(third) else (not math.isnan(onset) and abs(onset - 0.8) <= 0.05))


def _local_loss_large(_: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    large = ls[ls.num_nodes == 1024]
    lost = int(large.packets_lost_local.sum()) if len(large) else 0
    return ClaimCheck("Fig. 3b", "leaf-spine at 1,024 nodes: even local traffic is lost", "local loss > 0",
                      f"{lost} local packets lost" if len(large) else "n/a (needs 1,024 nodes)",
                      lost > 0 if len(large) else None)


def _local_one_us(_: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    if not len(ls):
        return ClaimCheck("Fig. 3c", "leaf-spine local latency at low load", "about 1 us", "n/a", None)
    low = ls[(ls.load == ls.load.min()) & ls.latency_local_mean_s.notna()]
    value = float(low.latency_local_mean_s.mean())
    return ClaimCheck("Fig. 3c", f"leaf-spine local latency at load {ls.load.min():g} (= switch latency)",
                      "about 1 us", _us(value), 0.9 * US <= value <= 1.2 * US)


def _local_within_6(_: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    worst = float(ls.latency_local_max_s.max()) if len(ls) else math.nan
    return ClaimCheck("Fig. 3c", "leaf-spine local packets delivered within 6 us", "<= 6 us", f"max {_us(worst)}",
                      None if math.isnan(worst) else worst <= 6 * US)


def _remote_saturates(_: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    worst = float(ls.latency_remote_mean_s.max()) if len(ls) else math.nan
    return ClaimCheck("Fig. 3c", "leaf-spine inter-pod latency saturates", "about 25 us",
                      f"max mean {_us(worst)}", None if math.isnan(worst) else 20 * US <= worst <= 30 * US)


def _ten_times(ops: pd.DataFrame, ls: pd.DataFrame) -> ClaimCheck:
    if not (len(ops) and len(ls)):
        return ClaimCheck("Sec. 3", "local packets: optical vs electrical latency", "about 10x lower", "n/a", None)
    load = max(ops.load.min(), ls.load.min())
    ratio = float(ls[ls.load == load].latency_local_mean_s.mean() / ops[ops.load == load].latency_local_mean_s.mean())
    return ClaimCheck("Sec. 3", f"local packets at load {load:g}: leaf-spine / OPSquare latency", "about 10x",
                      f"{ratio:.1f}x", ratio >= 10 if math.isfinite(ratio) else None)


CHECKS: tuple[Check, ...] = (_ideal_until_06, _no_loss_below_06, _saturation_outgoing, _local_within,
                             _remote_within, _scaling_penalty, _half_capacity, _loss_step, _local_loss_large,
                             _local_one_us, _local_within_6, _remote_saturates, _ten_times)


def check_claims(rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> list[ClaimCheck]:
    frame = _frame(rows)
    ops = frame[frame.network == "opsquare"]
    ls = frame[frame.network == "leafspine"]
    return [check(ops, ls) for check in CHECKS]
