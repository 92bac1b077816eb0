"""training/: from priced tasks to iteration time, time-to-accuracy, energy and cost.

`simulate_training(workload, pricer, settings)` builds the iteration's dependency graph with a
schedule (`schedules/`), places it in time (`timeline.py`) and sums it up (`simulate.py`).
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "Pricer": "ddlsim.training.pricing",
    "Overlap": "ddlsim.training.settings",
    "TrainingConfig": "ddlsim.training.settings",
    "TrainingSettings": "ddlsim.training.settings",
    "TrainingResult": "ddlsim.training.simulate",
    "build_graph": "ddlsim.training.simulate",
    "simulate_training": "ddlsim.training.simulate",
})
__all__ = [
    "Overlap", "Pricer", "TrainingConfig", "TrainingResult", "TrainingSettings", "build_graph",
    "simulate_training",
]
