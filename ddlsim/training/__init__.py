"""training/: from priced tasks to iteration time, time-to-accuracy, energy and cost.

`simulate_training(workload, pricer, settings)` builds the iteration's dependency graph with a
schedule (`schedules.py`), places it in time (`timeline.py`) and sums it up (`simulate.py`).
"""

from ddlsim.training import pipeline  # noqa: F401  (registers the 1f1b schedule)
from ddlsim.training.pricing import Pricer
from ddlsim.training.settings import Overlap, TrainingConfig, TrainingSettings
from ddlsim.training.simulate import TrainingResult, build_graph, simulate_training

__all__ = ["Overlap", "Pricer", "TrainingConfig", "TrainingResult", "TrainingSettings", "build_graph",
           "simulate_training"]
