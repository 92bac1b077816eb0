"""`task=search` explores uneven pipeline stages: pipelines that do not divide the layers (where
Megatron-Core's embedding/loss accounting splits them) and, beside an even split, one layer per
chunk fewer on the first and last stages; the pruned search still finds what pricing every plan
finds."""

from __future__ import annotations

import dataclasses

import pytest

from ddlsim.tasks.search import PlanSearch
from ddlsim.tasks.search_space import SearchSpace, enumerate_plans
from ddlsim.training import Overlap, TrainingSettings

SPACE = SearchSpace(tensor=(1, 2), pipeline=(), max_pipeline=4, virtual_stages=(1, 2), context=(1,), zero=(0, 1),
                    micro_batch=(1,), recompute=("none", "full"))


@pytest.fixture(scope="module")
def parts():
    import ddlsim.workload.models  # noqa: F401
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeConfig, ComputeModel
    from ddlsim.core.registry import MODELS
    from ddlsim.network.api import make_fabric

    # 10 layers: PP 3 and 4 split only with the embedding and the loss counted (12 layers' worth).
    model = MODELS.make("gpt", d_model=1024, heads=16, layers=10, seq_len=1024, global_batch=16,
                        vocab=128000)
    device = DeviceSpec.from_config(DeviceConfig(name="a100_80gb"))
    device = dataclasses.replace(device, memory_bytes=8 * 2**30)
    return model, device, ComputeModel.from_config(ComputeConfig(), device), make_fabric("superpod")


def searcher(parts, space, **options):
    model, device, compute, fabric = parts
    return PlanSearch(model, device, compute, fabric, "ring", TrainingSettings(overlap=Overlap.NONE), space,
                      **options)


def test_pipelines_and_splits_the_space_tries(parts):
    shape = parts[0].decoder
    assert SPACE.pipelines(shape) == (1, 2, 3, 4)
    assert dataclasses.replace(SPACE, uneven_stages=False).pipelines(shape) == (1, 2)
    assert SPACE.splits(shape, 4, 1) == ((0, 0),)  # automatic: 2, 3, 3, 2
    assert SPACE.splits(shape, 4, 2) == ()  # 10, 11 and 12 layers do not make 8 chunks
    even = dataclasses.replace(shape, layers=12)
    assert SPACE.splits(even, 4, 1) == ((0, 0), (2, 2))  # 3 x 4, or 2, 4, 4, 2
    assert SPACE.splits(even, 3, 2) == ((0, 0), (2, 2))  # 4 x 3, or 2, 8, 2 (one layer fewer per chunk)
    assert SPACE.splits(even, 2, 1) == ((0, 0),)  # no middle stage to take the layers


def test_every_uneven_plan_is_counted_once(parts):
    model = parts[0]
    plans = enumerate_plans(SPACE, model.decoder, model.global_batch, 8)
    keys = {(key.pipeline, key.first_stage_layers, key.last_stage_layers) for key in plans.candidates}
    assert (4, 0, 0) in keys and len(plans.candidates) + plans.invalid == plans.enumerated


def test_uneven_plans_are_priced_and_the_pruned_search_matches_the_brute_force(parts):
    pruned, _ = searcher(parts, SPACE, top=4).search(8)
    brute, stats = searcher(parts, SPACE, top=4, prune=False).search(8)
    assert [(item.key, round(item.time_s, 12)) for item in pruned] == \
        [(item.key, round(item.time_s, 12)) for item in brute]
    assert stats.bound_violations == 0
    everything, _ = searcher(parts, SPACE, top=10_000, prune=False).search(8)
    on_six, _ = searcher(parts, SPACE, top=10_000, prune=False).search(6)
    rows = {item.key.pipeline: item.row["stage_layers"] for item in everything + on_six}
    assert rows[4] == "2,3x2,2" and rows[3] == "3,4,3"  # 12 = 10 + embedding + loss layers, split evenly
    for item in everything + on_six:
        assert item.time_s >= item.lower_bound_s * (1 - 1e-9)


def test_more_splits_never_make_the_best_plan_slower(parts):
    with_uneven, _ = searcher(parts, SPACE, top=1).search(8)
    without, _ = searcher(parts, dataclasses.replace(SPACE, uneven_stages=False), top=1).search(8)
    assert with_uneven[0].time_s <= without[0].time_s
