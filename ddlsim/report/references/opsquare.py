"""The OPSquare paper's statements about its Figs. 2 and 3, checked against a measured sweep.

The paper publishes its results as plots only; its text states the numbers in
`configs/reference/papers.yaml` (Section 3 and the abstract). Each check computes our
counterpart from the rows of `experiment=opsquare_fig2_3` (``task=packet``) and says whether it
agrees within the tolerance written here ("almost ideal" = throughput >= 0.95 x load; "about"
a value = within the bounds below), or `None` when the sweep lacks the points to judge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference, load_papers
from ddlsim.report.reference import Comparison, define_reference

if TYPE_CHECKING:
    import pandas as pd

US = 1e-6
NEAR_IDEAL = 0.95           # "almost ideal" throughput: at least this fraction of the load
ABOUT_LOAD = 0.05           # "about 0.6" load / "from load 0.8": within this many load units
ABOUT_SWITCH = (0.9, 1.2)   # "around 1 us": within these factors
ABOUT_SATURATION = (0.8, 1.2)  # "saturates to 25 us": within these factors
ABOUT_TEN_TIMES = (0.5, 2.0)  # "a ten times lower latency": within a factor of 2 of 10 (5x to 20x)


@dataclass(frozen=True)
class ClaimCheck:
    key: str
    claim: str
    paper: str
    measured: str
    agrees: bool | None
    source: str = ""

    def as_row(self) -> dict[str, object]:
        return dict(self.__dict__)


def _frame(rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    return rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


def _us(value: float) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value / US:.3g} us"


Check = Callable[["pd.DataFrame", "pd.DataFrame", PaperReference], ClaimCheck]


def _claim(paper: PaperReference, key: str, measured: str, agrees: bool | None, claim: str | None = None
           ) -> ClaimCheck:
    value = paper.value(key)
    return ClaimCheck(key, claim or value.quantity, value.paper, measured, agrees, value.source)


def _ideal_until(ops: pd.DataFrame, _: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    limit = paper.value("ideal_until").number
    low = ops[ops.load <= limit + 1e-9]
    ratio = float((low.throughput / low.load).min()) if len(low) else math.nan
    return _claim(paper, "ideal_until", f"min throughput/load = {ratio:.3f}",
                  None if math.isnan(ratio) else ratio >= NEAR_IDEAL)


def _no_loss_below(ops: pd.DataFrame, _: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    low = ops[ops.load < paper.value("no_loss_below").number - 1e-9]
    worst = float(low.loss_ratio.max()) if len(low) else math.nan
    return _claim(paper, "no_loss_below", f"max loss ratio = {worst:.3g}", None if math.isnan(worst) else worst == 0)


def _saturation_outgoing(ops: pd.DataFrame, _: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    about = paper.value("saturation_outgoing").number
    outgoing = ops[ops.locality == 0]
    if not len(outgoing) or outgoing.load.max() < about + 0.1:
        return _claim(paper, "saturation_outgoing", f"n/a (needs locality 0, load >= {about + 0.1:g})", None)
    saturation = float(outgoing.throughput.max())
    return _claim(paper, "saturation_outgoing", f"max throughput {saturation:.3f}",
                  about - ABOUT_LOAD <= saturation <= about + ABOUT_LOAD)


def _within(frame: pd.DataFrame, column: str, paper: PaperReference, key: str) -> ClaimCheck:
    worst = float(frame[column].max()) if len(frame) else math.nan
    return _claim(paper, key, f"max {_us(worst)}", None if math.isnan(worst) else worst <= paper.value(key).number)


def _local_within(ops: pd.DataFrame, _: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    return _within(ops, "latency_local_max_s", paper, "local_within")


def _remote_within(ops: pd.DataFrame, _: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    return _within(ops, "latency_remote_max_s", paper, "remote_within")


def _scaling_penalty(ops: pd.DataFrame, _: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    pivot = ops.pivot_table(index=["locality", "load"], columns="num_nodes", values="latency_mean_s")
    if not {256, 1024} <= set(pivot.columns):
        return _claim(paper, "scaling_penalty", "n/a (needs both scales)", None)
    worst = float((pivot[1024] - pivot[256]).max())
    return _claim(paper, "scaling_penalty", f"max increase {_us(worst)}",
                  worst < paper.value("scaling_penalty").number)


def _half_capacity(_: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    import pandas as pd

    best = ls.groupby("locality").throughput.max() if len(ls) else pd.Series(dtype=float)
    has = {0.33, 0.67} <= set(best.index)
    text = ", ".join(f"{loc:g}: {value:.3f}" for loc, value in best.items())
    half = paper.value("half_capacity").number
    return _claim(paper, "half_capacity", f"max by locality {text}" if text else "n/a",
                  bool(best[0.33] < half < best[0.67]) if has else None)


def _loss_step(_: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    third = ls[ls.locality == 0.33]
    lossy = third[third.loss_ratio > 1e-3].load
    onset = float(lossy.min()) if len(lossy) else math.nan
    shown = "no loss up to load " + f"{third.load.max():g}" if len(third) and math.isnan(onset) else f"{onset:g}"
    step = paper.value("loss_step").number
    return _claim(paper, "loss_step", f"first load with loss > 0.1%: {shown}" if len(third) else "n/a",
                  None if not len(third) else (not math.isnan(onset) and abs(onset - step) <= ABOUT_LOAD))


def _local_loss_large(_: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    large = ls[ls.num_nodes == 1024]
    lost = int(large.packets_lost_local.sum()) if len(large) else 0
    return _claim(paper, "local_loss_large", f"{lost} local packets lost" if len(large) else "n/a (needs 1,024 nodes)",
                  lost > 0 if len(large) else None)


def _local_one_us(_: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    if not len(ls):
        return _claim(paper, "local_one_us", "n/a", None)
    low = ls[(ls.load == ls.load.min()) & ls.latency_local_mean_s.notna()]
    value = float(low.latency_local_mean_s.mean())
    switch = paper.value("local_one_us").number
    return _claim(paper, "local_one_us", _us(value), ABOUT_SWITCH[0] * switch <= value <= ABOUT_SWITCH[1] * switch,
                  f"leaf-spine local latency at load {ls.load.min():g} (= switch latency)")


def _local_within_6(_: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    return _within(ls, "latency_local_max_s", paper, "local_within_6")


def _remote_saturates(_: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    worst = float(ls.latency_remote_mean_s.max()) if len(ls) else math.nan
    level = paper.value("remote_saturates").number
    return _claim(paper, "remote_saturates", f"max mean {_us(worst)}",
                  None if math.isnan(worst) else ABOUT_SATURATION[0] * level <= worst <= ABOUT_SATURATION[1] * level)


def _ten_times(ops: pd.DataFrame, ls: pd.DataFrame, paper: PaperReference) -> ClaimCheck:
    if not (len(ops) and len(ls)):
        return _claim(paper, "ten_times", "n/a", None)
    load = max(ops.load.min(), ls.load.min())
    ratio = float(ls[ls.load == load].latency_local_mean_s.mean() / ops[ops.load == load].latency_local_mean_s.mean())
    stated = paper.value("ten_times").number
    return _claim(paper, "ten_times", f"{ratio:.1f}x",
                  ABOUT_TEN_TIMES[0] * stated <= ratio <= ABOUT_TEN_TIMES[1] * stated if math.isfinite(ratio) else None,
                  f"local packets at load {load:g}: leaf-spine / OPSquare latency")


CHECKS: tuple[Check, ...] = (_ideal_until, _no_loss_below, _saturation_outgoing, _local_within,
                             _remote_within, _scaling_penalty, _half_capacity, _loss_step, _local_loss_large,
                             _local_one_us, _local_within_6, _remote_saturates, _ten_times)


def check_claims(rows: Iterable[Mapping[str, object]] | pd.DataFrame,
                 paper: PaperReference | None = None) -> list[ClaimCheck]:
    """Every statement of the paper about Figs. 2 and 3, judged on `rows`."""
    frame = _frame(rows)
    paper = paper or load_papers().reference("opsquare_fig2_3")
    if frame.empty:
        return [check(frame, frame, paper) for check in CHECKS]
    ops = frame[frame.network == "opsquare"]
    ls = frame[frame.network == "leafspine"]
    return [check(ops, ls, paper) for check in CHECKS]


AGREES = {True: "yes", False: "NO", None: "n/a"}


@define_reference("opsquare_fig2_3", expects={"network": (), "load": (), "locality": (), "latency_mean_s": ()},
                    figures=lambda frame, directory: figures(frame, directory))
def opsquare_fig2_3(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    return [Comparison(check.claim, check.paper, f"{check.measured} (agrees: {AGREES[check.agrees]})", check.source,
                       check.key) for check in check_claims(frame, paper)]


# The paper's stated latency bounds, drawn as reference lines (Section 3).
LATENCY_LINES = {"opsquare": ("local_within", "remote_within"), "leafspine": ("local_one_us", "remote_saturates")}
TITLES = {"opsquare": "Fig. 2: OPSquare for ML", "leafspine": "Fig. 3: H100 leaf-spine"}


def plot_network(frame: pd.DataFrame, network: str, directory: Path) -> list[Path]:
    """Throughput, loss and mean latency against offered load; colour per locality, line style per scale."""
    from ddlsim.report.charts import Guide, Panel, Quantity, line_chart

    paper = load_papers().reference("opsquare_fig2_3")
    data = frame[frame.network == network].sort_values(["locality", "num_nodes", "load"])
    data = data.assign(share=data.locality.map(lambda value: f"{value:.0%} local"),
                       nodes=data.num_nodes.map(lambda value: f"{value:,} nodes"))
    loss = Quantity("loss_ratio", "packet loss ratio", scale="log")
    chart = [Panel(data, "(a) throughput", y=Quantity("throughput", "throughput (fraction of 3.6 Tb/s per node)")),
             Panel(data, "(b) packet loss (zero not drawn)", y=loss),
             Panel(data, "(c) packet latency", y=Quantity("latency_mean_s", "mean packet latency", "time_s", "log"))]
    guides = [Guide(1.0, "ideal", kind="ratio", panel=0)]
    guides += [Guide(paper.value(key).number, f"paper: {paper.value(key).quantity}", panel=2)
               for key in LATENCY_LINES[network]]
    stem = "fig2_opsquare" if network == "opsquare" else "fig3_leafspine"
    return line_chart(chart, Quantity("load", "offered load"), chart[0].y, "share", directory, stem, variant="nodes",
                      guides=guides, legend_title="locality, scale", title=f"{TITLES[network]} (ddlsim packet model)")


def figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    return [path for network in dict.fromkeys(frame["network"]) for path in plot_network(frame, network, directory)]
