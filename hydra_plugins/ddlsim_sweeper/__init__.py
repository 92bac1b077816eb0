"""ddlsim's sweeper: Hydra's basic sweeper with a config loader that composes once per sweep.

Hydra instantiates sweepers only from the ``hydra_plugins`` namespace, so the class lives here;
the loader is `ddlsim.sweep_compose.ComposeOnceLoader`. Chosen in ``configs/config.yaml``
(``override hydra/sweeper: ddlsim``).
"""

from __future__ import annotations

from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.types import HydraContext


class DdlsimBasicSweeper(BasicSweeper):
    """The basic sweeper; its validation and its launcher share one `ComposeOnceLoader`."""

    def setup(self, *, hydra_context: HydraContext, **kwargs: Any) -> None:
        from ddlsim.sweep_compose import ComposeOnceLoader

        loader = ComposeOnceLoader(hydra_context.config_loader)
        super().setup(hydra_context=HydraContext(config_loader=loader, callbacks=hydra_context.callbacks), **kwargs)
