"""FSDP2's copy kernels in the analytic ZeRO-3 workload (`ddlsim/workload/kernels/fsdp.py`).

The toy model of `llm_fixtures` (h = 1024, SwiGLU 4096, vocabulary 32,000, bf16), TP 2, DP 4,
ZeRO 3: one layer holds 7,604,224 parameters on a TP rank, sharded over the 4 DP ranks. Its
all-gather copies read and write the rank's 1,901,056-element shard (2 x 2 x 1,901,056 =
7,604,224 bytes) and then the gathered 7,604,224 elements (2 x 2 x 7,604,224 = 30,416,896
bytes); its reduce-scatter copy-in reads the bf16 gradients and writes the bf16 reduce-scatter
input (2 x 2 x 7,604,224 = 30,416,896 bytes).
"""

import pytest
from llm_fixtures import build, llama_like, mixtral_like

from ddlsim.compute.kernel_registry import kernels_for
from ddlsim.core.types import CollectiveCall, CollectiveOp, Phase
from ddlsim.core.work import ComputeTask
from ddlsim.workload.parallel import ParallelConfig

LAYER = 7_604_224
COPY_TASKS = ("fsdp_all_gather_copies", "fsdp_reduce_scatter_copy_in")


def _tasks(workload, block_name):
    return next(block.tasks for block in workload.blocks if block.name == block_name)


def _kinds(tasks):
    return [task.name if isinstance(task, ComputeTask) else task.op.value for task in tasks]


def test_a_layer_gathers_then_copies_out_and_copies_in_then_reduce_scatters():
    workload = build(llama_like(), 8, tensor=2, data=4, zero=3, micro_batch=1)
    forward, backward = _tasks(workload, "forward"), _tasks(workload, "backward")
    assert _kinds(forward)[:3] == ["all_gather", "fsdp_all_gather_copies", "layer_forward"]
    kinds = [kind for kind in _kinds(backward) if kind != "all_reduce"]  # TP all-reduces of recompute, backward
    assert kinds == ["all_gather", "fsdp_all_gather_copies", "layer_recompute", "layer_backward",
                     "fsdp_reduce_scatter_copy_in", "reduce_scatter"]
    gather, copies = forward[0], forward[1]
    assert gather.size_bytes == 2 * LAYER
    assert [(kernel.name, kernel.bytes) for kernel in kernels_for(copies.signature, copies.phase)] == [
        ("fsdp_all_gather_copy_in", 7_604_224), ("fsdp_all_gather_copy_out", 30_416_896)]
    assert copies.memory_bytes == 7_604_224 + 30_416_896 and copies.flop == 0
    copy_in = next(task for task in backward if task.name == "fsdp_reduce_scatter_copy_in")
    assert [(kernel.name, kernel.bytes) for kernel in kernels_for(copy_in.signature, copy_in.phase)] == [
        ("fsdp_reduce_scatter_copy_in", 30_416_896)]


def test_every_zero3_collective_has_its_copy():
    """Mixtral-like, DP 8, EP 4: dense and expert parameters are gathered (and scattered) apart,
    each collective with its own copy task; gathers come before their copies, copy-ins before
    their reduce-scatters."""
    workload = build(mixtral_like(), 8, data=8, expert=4, zero=3, micro_batch=1)
    expert_gathers = 0
    for block in workload.blocks:
        gathers = [i for i, t in enumerate(block.tasks) if isinstance(t, CollectiveCall)
                   and t.name.startswith("fsdp_") and t.op is CollectiveOp.ALL_GATHER]
        scatters = [i for i, t in enumerate(block.tasks) if isinstance(t, CollectiveCall)
                    and t.name.startswith("fsdp_") and t.op is CollectiveOp.REDUCE_SCATTER]
        copy_outs = [i for i, t in enumerate(block.tasks) if t.name == "fsdp_all_gather_copies"]
        copy_ins = [i for i, t in enumerate(block.tasks) if t.name == "fsdp_reduce_scatter_copy_in"]
        assert len(gathers) == len(copy_outs) and len(scatters) == len(copy_ins), block.name
        assert all(g < c for g, c in zip(gathers, copy_outs, strict=True))
        assert all(c < s for c, s in zip(copy_ins, scatters, strict=True))
        expert_gathers += sum(block.tasks[i].name == "fsdp_expert_param_all_gather" for i in gathers)
    assert expert_gathers == 2  # the MoE layers' forward and backward blocks


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_other_zero_stages_have_no_copies(zero):
    workload = build(llama_like(), 8, tensor=2, data=4, zero=zero, micro_batch=1)
    assert not [task for block in workload.blocks for task in block.tasks if task.name in COPY_TASKS]


def test_fsdp_copies_off_is_the_workload_without_the_copy_tasks():
    on = build(llama_like(), 8, tensor=2, data=4, zero=3, micro_batch=1)
    off = build(llama_like(), 8, tensor=2, data=4, zero=3, micro_batch=1, fsdp_copies=False)
    assert [(block.name, block.repeat, tuple(task for task in block.tasks if task.name not in COPY_TASKS))
            for block in on.blocks] == [(block.name, block.repeat, block.tasks) for block in off.blocks]
    assert on.blocks != off.blocks


def test_copies_are_priced_as_memory_bound_kernels():
    from ddlsim.compute.options import build_compute
    from ddlsim.core import registry

    device = registry.build("device", "h100_sxm")
    compute = build_compute("roofline", device)
    copies = _tasks(build(llama_like(), 8, tensor=2, data=4, zero=3, micro_batch=1), "forward")[1]
    time_s = compute.estimate(copies).time_s
    assert copies.memory_bytes / device.memory_bandwidth_bytes_per_s < time_s < 1e-3


def test_copies_run_in_the_phase_of_their_collective_and_are_on_by_default():
    assert ParallelConfig().fsdp_copies is True
    workload = build(llama_like(), 8, tensor=2, data=4, zero=3, micro_batch=1)
    phases = {(block.name, task.name, task.phase) for block in workload.blocks for task in block.tasks
              if task.name in COPY_TASKS}
    assert phases == {("embedding_forward", "fsdp_all_gather_copies", Phase.FORWARD),
                      ("forward", "fsdp_all_gather_copies", Phase.FORWARD),
                      ("output_forward", "fsdp_all_gather_copies", Phase.FORWARD),
                      ("output_backward", "fsdp_all_gather_copies", Phase.BACKWARD),
                      ("output_backward", "fsdp_reduce_scatter_copy_in", Phase.BACKWARD),
                      ("backward", "fsdp_all_gather_copies", Phase.BACKWARD),
                      ("backward", "fsdp_reduce_scatter_copy_in", Phase.BACKWARD),
                      ("embedding_backward", "fsdp_reduce_scatter_copy_in", Phase.BACKWARD)}
