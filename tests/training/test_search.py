"""`task=search`: the pruned search finds what pricing every plan finds, never prices a plan that
does not fit, counts every plan once, and gives the same rows every time."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.report.search_tables import fabric_comparison
from ddlsim.tasks.search import PlanSearch, SearchStats, pareto_flags, search_rows
from ddlsim.tasks.search_space import SearchSpace, enumerate_plans
from ddlsim.training import Overlap, TrainingSettings
from ddlsim.workload.feasibility import check_plan

SPACE = SearchSpace(tensor=(1, 2, 4), pipeline=(1, 2, 4), virtual_stages=(1, 2), context=(1, 2), zero=(0, 1, 3),
                    micro_batch=(1, 2), recompute=("none", "selective", "full"))
BUDGETS = [4, 8, 16]


@pytest.fixture(scope="module")
def parts():
    import ddlsim.workload.models  # noqa: F401
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeConfig, ComputeModel
    from ddlsim.core.registry import MODELS
    from ddlsim.network.api import make_fabric

    model = MODELS.make("gpt", d_model=2048, heads=16, layers=8, seq_len=1024, global_batch=32)
    device = DeviceSpec.from_config(DeviceConfig(name="a100_80gb"))
    device = dataclasses.replace(device, memory_bytes=6 * 2**30)  # small enough that memory rejects plans
    return model, device, ComputeModel.from_config(ComputeConfig(), device), make_fabric("superpod")


def searcher(parts, overlap=Overlap.NONE, **options):
    # Ring collectives: with `best` on the SuperPod a price can depend on what the estimator priced
    # before (a reduce-scatter after an all-reduce of the same group), and the pruned search prices
    # plans in another order than the brute force.
    model, device, compute, fabric = parts
    return PlanSearch(model, device, compute, fabric, "ring", TrainingSettings(overlap=overlap), SPACE, **options)


# With overlap the brute force prices every plan through the timeline (about 34 s of CPU for the three
# budgets): the default run keeps 16 GPUs, the budget where pruning is partial (94 of 557 plans
# priced); the other two, where the bound prunes all but a handful, run with -m slow.
@pytest.mark.parametrize(("overlap", "budgets"), [
    (Overlap.NONE, BUDGETS), (Overlap.DP_BACKWARD, [16]),
    pytest.param(Overlap.DP_BACKWARD, BUDGETS, marks=pytest.mark.slow, id="dp_backward-all_budgets")])
def test_pruned_search_finds_the_brute_force_best_plans_and_front(parts, overlap, budgets):
    labels = {"fabric": "superpod", "model": "gpt", "algorithm": "best", "device": "a100_80gb"}
    pruned_rows, pruned = search_rows(searcher(parts, overlap, top=3), budgets, labels)
    brute_rows, brute = search_rows(searcher(parts, overlap, top=10**9, prune=False), budgets, labels)
    assert pruned.pruned > 0 and pruned.priced < brute.priced  # the bounds did work
    assert brute.pruned == 0 and pruned.bound_violations == brute.bound_violations == 0

    def ranked(rows, depth):
        return [(row["gpus"], row["plan_rank"], row["tp_degree"], row["cp_degree"], row["pp_degree"],
                 row["virtual_stages"], row["dp_degree"], row["zero_stage"], row["micro_batch"], row["recompute"],
                 row["iteration_time_s"], row["pareto"]) for row in rows if row["plan_rank"] <= depth]

    assert ranked(pruned_rows, 3) == ranked(brute_rows, 3)


def test_infeasible_plans_are_never_priced_and_every_plan_is_counted_once(parts):
    model, device, _, _ = parts
    search = searcher(parts, top=2)
    priced = []
    price = search.price

    def recording(key):
        priced.append(key)
        return price(key)

    search.price = recording
    stats = SearchStats()
    for gpus in BUDGETS:
        stats.add(search.search(gpus)[1])
    assert stats.over_memory > 0 and stats.invalid > 0
    assert all(check_plan(model, key.parallel(), device.memory_bytes).feasible for key in priced)
    enumerated = sum(enumerate_plans(SPACE, model.decoder, model.global_batch, gpus).enumerated for gpus in BUDGETS)
    assert stats.enumerated == enumerated == stats.invalid + stats.over_memory + stats.pruned + stats.priced


def test_lower_bounds_never_exceed_the_priced_iteration(parts):
    search = searcher(parts, top=10**9, prune=False)
    model = search.model
    for gpus in BUDGETS:
        for bound, key, plan in search.evaluate(gpus, SearchStats()):
            row = search.price(key)
            refined = search.bounds.refined_bound_s(key, plan, model.precision, model.grad_precision, True)
            assert bound <= row["iteration_time_s"] * (1 + 1e-12)
            assert refined <= row["iteration_time_s"] * (1 + 1e-12)


def test_the_same_search_gives_the_same_rows(parts):
    labels = {"fabric": "superpod"}
    first, _ = search_rows(searcher(parts, top=4), BUDGETS, labels)
    second, _ = search_rows(searcher(parts, top=4), BUDGETS, labels)
    assert pd.DataFrame(first).equals(pd.DataFrame(second))
    assert [row["plan_rank"] for row in first if row["gpus"] == 16] == [1, 2, 3, 4]


def test_pareto_front_keeps_budgets_that_beat_every_smaller_one():
    assert pareto_flags({4: 3.0, 8: 2.0, 16: 2.5, 32: 1.0}) == {4: True, 8: True, 16: False, 32: True}


def test_search_refuses_models_that_are_not_decoders(parts):
    from ddlsim.core.registry import MODELS

    _, device, compute, fabric = parts
    with pytest.raises(ConfigError, match="decoder LLM plans"):
        PlanSearch(MODELS.make("megatron", target_loss=2.5), device, compute, fabric, "best", TrainingSettings(),
                   SPACE)


def test_search_task_through_the_runner_and_the_fabric_comparison():
    from ddlsim.app.runner import run

    overrides = ["experiment=search", "model.config=gpt2", "model.global_batch=16", "task.gpus=[4,8]",
                 "task.tensor=[1,2]", "task.context=[1]", "task.virtual_stages=[1]", "task.top=2",
                 "task.progress=false"]
    rows = []
    for fabric in ("superpod", "ramp"):
        result = run([*overrides, f"fabric={fabric}"])
        assert "Pareto table" in result.summary and "plans:" in result.summary
        assert {row["plan_rank"] for row in result.rows} == {1, 2}
        rows += result.rows
    text = fabric_comparison(pd.DataFrame(rows))
    assert "8 GPUs:" in text and "wins" in text and "Pareto table on ramp" in text
