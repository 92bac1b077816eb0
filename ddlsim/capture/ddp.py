"""Compatibility of `DistributedDataParallel` with a fake process group and fake tensors.

Two things DDP does cannot run on a process group that carries no data:

- at construction it checks the parameter shapes across ranks and broadcasts rank 0's
  parameters (``init_sync``), reading their memory, which fake tensors do not have: both are
  skipped while a capture runs;
- it puts every parameter in one bucket for the first iteration, then rebuilds buckets of
  ``bucket_cap_mb`` in the order gradients became ready, agreeing on that order by a broadcast
  whose values it reads. While a capture runs DDP builds its ``bucket_cap_mb`` buckets at once,
  in reverse parameter order (the order it uses when it must find unused parameters), and
  keeps them;
- its reducer's built-in all-reduce waits for a future whose value the fake process group
  leaves empty. While a capture runs, a DDP module without a communication hook gets one that
  does what the built-in does (divide the bucket by the group size, all-reduce it) and hands
  the bucket back; futures of works returned to Python carry their tensors, so user hooks run.

The reducer still issues one all-reduce per bucket as gradients become ready, so the capture
sees the program's buckets and their overlap with backward.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist


def _allreduce_hook(process_group, bucket):  # DDP checks these annotations: leave them out
    tensor = bucket.buffer()
    tensor.div_(process_group.size())
    dist.all_reduce(tensor, group=process_group, async_op=True)
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(tensor)
    return future


@contextlib.contextmanager
def ddp_on_fake_process_group() -> Iterator[None]:
    from torch.nn.parallel import distributed as ddp_module

    ddp = ddp_module.DistributedDataParallel
    skipped = ("_sync_module_states", "_verify_param_shape_across_processes")
    saved = [(ddp_module, name, ddp_module.__dict__.get(name)) for name in skipped]
    saved.append((ddp, "_pre_forward", ddp.__dict__["_pre_forward"]))
    config = ddp_module._BucketCapacityConfig
    saved.append((config, "compute_bucket_size_limits", config.__dict__["compute_bucket_size_limits"]))
    limits = config.compute_bucket_size_limits
    config.compute_bucket_size_limits = lambda self, *args, **kwargs: limits(self, False, True)
    reducer = torch._C._distributed_c10d.Reducer
    saved.append((reducer, "_rebuild_buckets", reducer.__dict__["_rebuild_buckets"]))
    reducer._rebuild_buckets = lambda self: False
    original_pre_forward = ddp._pre_forward

    def pre_forward(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        if not self._comm_hooks and not getattr(self, "_ddlsim_hook", False):
            self._ddlsim_hook = True
            self.register_comm_hook(self.process_group, _allreduce_hook)
        return original_pre_forward(self, *inputs, **kwargs)

    for name in skipped:
        if ddp_module.__dict__.get(name) is not None:
            setattr(ddp_module, name, lambda *args, **kwargs: None)
    ddp._pre_forward = pre_forward
    try:
        yield
    finally:
        for owner, name, value in saved:
            if value is not None:
                setattr(owner, name, value)
