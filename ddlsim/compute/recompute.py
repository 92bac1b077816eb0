"""Make the recomputation of activation checkpointing visible, so it is measured on its own.

An equivalent model wraps its blocks in `torch.utils.checkpoint`; during backward, torch re-runs
their forward (the recompute) from inside the autograd engine. torch offers no public hook for
that moment (``context_fn`` is an argument of the model's own call), so while `on_recompute`
is active this module routes both checkpoint implementations through a wrapper:

- non-reentrant (``use_reentrant=False``): the recomputation runs through
  ``torch.utils.checkpoint._run_fn_with_dynamo_disabled``;
- reentrant (``use_reentrant=True``): ``CheckpointFunction`` calls its ``run_function`` again
  under ``enable_grad`` in backward (in forward it runs under ``no_grad``).

The patch is undone on exit. If a future torch renames these internals, `on_recompute` reports
``supported = False`` and the profiler says so instead of silently folding recompute into backward.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils.checkpoint as checkpoint_module

# `wrap(run)` must call `run()` exactly once and return its result.
RecomputeWrapper = Callable[[Callable[[], Any]], Any]


class RecomputeHook:
    """Whether the active torch exposes the points this module patches."""

    def __init__(self) -> None:
        self.non_reentrant = callable(getattr(checkpoint_module, "_run_fn_with_dynamo_disabled", None))
        self.reentrant = hasattr(getattr(checkpoint_module, "CheckpointFunction", None), "forward")

    @property
    def supported(self) -> bool:
        return self.non_reentrant and self.reentrant


@contextlib.contextmanager
def on_recompute(wrap: RecomputeWrapper) -> Iterator[RecomputeHook]:
    """While active, every checkpoint recomputation runs as ``wrap(run)``."""
    hook = RecomputeHook()
    patches: list[tuple[Any, str, Any]] = []
    if hook.non_reentrant:
        original_run = checkpoint_module._run_fn_with_dynamo_disabled

        def run_labelled(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return wrap(lambda: original_run(fn, *args, **kwargs))

        patches.append((checkpoint_module, "_run_fn_with_dynamo_disabled", original_run))
        checkpoint_module._run_fn_with_dynamo_disabled = run_labelled
    if hook.reentrant:
        function_class = checkpoint_module.CheckpointFunction
        original_forward = function_class.__dict__["forward"]
        forward = original_forward.__func__ if isinstance(original_forward, staticmethod) else original_forward

        def run_function_labelled(run_function: Callable[..., Any]) -> Callable[..., Any]:
            def run(*args: Any) -> Any:
                if torch.is_grad_enabled():  # backward's re-run; forward runs under no_grad
                    return wrap(lambda: run_function(*args))
                return run_function(*args)
            return run

        def forward_labelled(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool,
                             *args: Any) -> Any:
            return forward(ctx, run_function_labelled(run_function), preserve_rng_state, *args)

        patches.append((function_class, "forward", original_forward))
        function_class.forward = staticmethod(forward_labelled)
    try:
        yield hook
    finally:
        for owner, name, original in reversed(patches):
            setattr(owner, name, original)
