"""Which module issued an op, and in which phase of the step.

- Module: the innermost module running, by its fully qualified name (`torch`'s `ModTracker`:
  the root module's class name, then the attribute path, e.g. ``GPT.layers.3.mlp``), in forward
  and in backward alike: of the modules the tracker holds active, the one entered last (its
  forward, or its backward when its outputs' gradients arrived). ModTracker ends a module's
  backward when the gradients of its positional inputs are computed; a module called with
  keyword arguments only (transformers' attention and decoder layers) stays active until the
  end of backward, and entry order keeps it from claiming the ops of the layers after it.
  Ops outside every module (the optimizer, the loss) have ``""``.
- Phase: ``optimizer`` inside `Optimizer.step`; ``recompute`` while activation checkpointing
  re-runs a forward during backward (non-reentrant checkpoints); ``backward`` while the
  autograd engine runs; outside all of these, the phase of the last module call or backward
  (so the loss belongs to the forward and a gradient all-reduce after backward to the backward).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.utils.checkpoint as checkpoint_module
from torch.distributed._tools.mod_tracker import ModTracker
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

GLOBAL = "Global"


class Attribution:
    def __init__(self) -> None:
        self.tracker: ModTracker | None = None
        self.in_optimizer = 0
        self.recomputing = 0
        self.region = "forward"
        self.entered: dict[str, int] = {}  # module name -> when its forward or backward last began
        self._ticks = 0

    def module(self) -> str:
        if self.tracker is None:
            return ""
        parents = self.tracker.parents
        if len(parents) <= 1:
            return ""
        return max((name for name in parents if name != GLOBAL),
                   key=lambda name: (self.entered.get(name, 0), name.count("."), name))

    def _entered(self, module: object, *_: object) -> None:
        name = self.tracker.get_known_fqn(module) if self.tracker is not None and module is not None else None
        if name is not None:
            self._ticks += 1
            self.entered[name] = self._ticks

    def phase(self) -> str:
        if self.in_optimizer:
            return "optimizer"
        if self.recomputing:
            return "recompute"
        if torch._C._current_graph_task_id() != -1:
            self.region = "backward"
        return self.region

    def _module_called(self, *_: object) -> None:
        if torch._C._current_graph_task_id() == -1 and not self.in_optimizer:
            self.region = "forward"

    @contextlib.contextmanager
    def tracking(self) -> Iterator[Attribution]:
        def enter(*_: object) -> None:
            self.in_optimizer += 1

        def leave(*_: object) -> None:
            self.in_optimizer -= 1

        pre, post = register_optimizer_step_pre_hook(enter), register_optimizer_step_post_hook(leave)
        called = register_module_forward_pre_hook(self._module_called)
        tracker = ModTracker()
        tracker.register_user_hooks(pre_fw_hook=self._entered, pre_bw_hook=self._entered)
        self.region = "forward"
        try:
            with tracker, self._counting_recomputation():
                self.tracker = tracker
                yield self
        finally:
            self.tracker = None
            for handle in (pre, post, called):
                handle.remove()

    @contextlib.contextmanager
    def _counting_recomputation(self) -> Iterator[None]:
        """Count the non-reentrant checkpoint recomputations running (a reentrant checkpoint's
        recomputation is counted as backward)."""
        hook = checkpoint_module._recomputation_hook
        saved = {name: hook.__dict__.get(name) for name in ("__enter__", "__exit__")}
        enter, leave = hook.__enter__, hook.__exit__

        def hook_enter(this: object) -> object:
            self.recomputing += 1
            return enter(this)

        def hook_exit(this: object, *args: object) -> object:
            self.recomputing -= 1
            return leave(this, *args)

        hook.__enter__, hook.__exit__ = hook_enter, hook_exit
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    delattr(hook, name)
                else:
                    setattr(hook, name, value)
