"""ddlsim's sweeper: the jobs of Hydra's basic sweeper, each set of group choices composed once.

Hydra instantiates sweepers only from the ``hydra_plugins`` namespace, so the class lives here.
It launches the jobs `ddlsim.app.sweep.callbacks.expand_sweep` lists (the basic sweeper's: the product of
every key's values, in order, ``params`` first), in batches of ``max_batch_size``, checking each
batch's configs before launching it, through `ddlsim.app.sweep.compose.ComposeOnceLoader`. Chosen
in ``configs/config.yaml`` (``override hydra/sweeper: ddlsim``); only public Hydra APIs are used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


class DdlsimBasicSweeper(Sweeper):
    """The basic sweeper's jobs; its check and its launcher share one `ComposeOnceLoader`."""

    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        self.max_batch_size = max_batch_size
        self.params = dict(params or {})
        self.config: DictConfig | None = None
        self.launcher: Any = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from ddlsim.app.sweep.compose import ComposeOnceLoader

        self.config = config
        self.hydra_context = HydraContext(config_loader=ComposeOnceLoader(hydra_context.config_loader),
                                          callbacks=hydra_context.callbacks)
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=self.hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        from ddlsim.app.sweep.callbacks import expand_sweep

        assert self.config is not None and self.launcher is not None
        jobs = expand_sweep([*(f"{key}={value}" for key, value in self.params.items()), *arguments])
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        size = self.max_batch_size or len(jobs) or 1
        returns = []
        for start in range(0, len(jobs), size):
            batch = jobs[start:start + size]
            self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=start)
            for result in results:
                _ = result.return_value  # raises the job's exception, as the basic sweeper does
            returns.append(results)
        return returns
