"""Train one model on one fabric: workload -> compute and network prices -> iteration timeline.

    result = train_on_fabric(model, parallel, device, compute_model, fabric, algorithm, settings)

This is the library call behind ``task=train``; it takes built objects, not configs.
"""

from __future__ import annotations

from typing import Any

from ddlsim.core.caches import Memo
from ddlsim.core.types import CollectiveCall, CollectiveEstimate, ComputeEstimate, Precision
from ddlsim.core.work import ComputeTask
from ddlsim.training.pricing import CollectiveTimer, ComputeTimer, Pricer
from ddlsim.training.settings import TrainingSettings
from ddlsim.training.simulate import TrainingResult, simulate_training

_ESTIMATORS = Memo("training.estimators", 4)  # few: a large fabric's estimator holds its step prices
PRICES_KEPT = 4096  # single collective calls priced per estimator (a sweep's sizes and groups)


def _lone_rank(call: CollectiveCall, fabric: Any) -> CollectiveEstimate:
    """A group of one rank has nothing to exchange."""
    return CollectiveEstimate(op=call.op, size_bytes=call.size_bytes, group_size=1, algorithm="none",
                              fabric=str(getattr(fabric, "name", "")), time_s=0.0, latency_s=0.0, transfer_s=0.0,
                              compute_s=0.0, num_steps=0)


def reduction_model(device: Any, precision: Precision = Precision.FP16) -> Any:
    """The roofline of the GPUs that reduce inside collectives: the job's own device."""
    from ddlsim.network.reduction import ReductionModel

    return ReductionModel(peak_flop_per_s=device.peak(precision),
                          memory_bandwidth_bps=device.memory_bandwidth_bps,
                          element_bytes=precision.bytes_per_element, device=device.name)


def network_timer(fabric: Any, algorithm: Any, reduction: Any = None) -> CollectiveTimer:
    """Price one collective call on `fabric` with `algorithm` (``best`` tries them all).

    `reduction` prices the local reductions inside collectives (a `ReductionModel`; None
    leaves them out). The estimator caches schedules and prices across calls.
    """
    return estimator_timer(_estimator_entry(fabric, algorithm, reduction)[2], fabric)


def _estimator_entry(fabric: Any, algorithm: Any, reduction: Any) -> tuple[Any, Any, Any, Memo]:
    """(fabric, algorithm, their estimator, the prices of single calls it gave) for `network_timer` and
    `train_on_fabric`."""
    from ddlsim.network import CollectiveEstimator

    # The same fabric and algorithm objects (a `ddlsim.Session` reuses them) share one estimator, so
    # its schedules and prices carry over from run to run; the entry holds both, so their ids stay theirs.
    key = (id(fabric), id(algorithm), reduction)
    entry = _ESTIMATORS.get(key)
    if entry is None:
        prices = Memo("training.collective prices", PRICES_KEPT)
        entry = _ESTIMATORS.put(key, (fabric, algorithm, CollectiveEstimator(fabric, algorithm, reduction), prices))
    return entry


def estimator_timer(estimator: Any, fabric: Any) -> CollectiveTimer:
    """A collective timer over `estimator`; a one-rank group costs nothing on `fabric`."""

    def timer(call: CollectiveCall) -> CollectiveEstimate:
        if call.group.size == 1:
            return _lone_rank(call, fabric)
        return estimator.estimate_call(call)

    return timer


def compute_timer(compute_model: Any) -> ComputeTimer:
    def timer(task: ComputeTask) -> ComputeEstimate:
        return compute_model.estimate(task)

    return timer


def train_on_fabric(model: Any, parallel: Any, device: Any, compute_model: Any, fabric: Any, algorithm: Any,
                    settings: TrainingSettings | None = None) -> TrainingResult:
    """Build `model`'s workload for `device`'s memory, price it on `fabric`, and time the training."""
    workload = model.build_workload(parallel, device.memory_bytes)
    _, _, estimator, prices = _estimator_entry(fabric, algorithm, reduction_model(device))
    # A call's price is a function of its priced fields and the estimator alone (`Pricer`), so the runs
    # on one estimator share the prices of their calls, as the estimator's own caches do, at less cost.
    pricer = Pricer(estimator_timer(estimator, fabric), compute_timer(compute_model), _collectives=prices)
    return simulate_training(workload, pricer, settings or TrainingSettings(), fabric=fabric, device=device)
