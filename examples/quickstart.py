"""The README's example: an MLP stack with Megatron TP and FSDP2 on 128 fake ranks, on two fabrics."""
import torch
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import ddlsim


def build(mesh):  # your program: build the model, parallelize it, return one training step
    bf16 = {"dtype": torch.bfloat16}
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(4096, 16384, **bf16), torch.nn.GELU(),
                                                      torch.nn.Linear(16384, 4096, **bf16)) for _ in range(8)])
    for block in model:
        parallelize_module(block, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
        fully_shard(block, mesh=mesh["dp"])
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)

    def step():
        model(torch.randn(8, 2048, 4096, dtype=torch.bfloat16)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


if __name__ == "__main__":
    program = ddlsim.capture(build, mesh_shape=(16, 8), mesh_dim_names=("dp", "tp"))
    print(program.collective_summary().to_string(index=False))
    for fabric in ("superpod", "ramp"):
        result = ddlsim.simulate(program, fabric=fabric, device="h100_sxm")
        print(f"{fabric}: iteration {1e3 * result.iteration_time_s:.1f} ms = compute "
              f"{1e3 * result.compute_time_s:.1f} ms + exposed communication {1e3 * result.exposed_comm_time_s:.1f} ms")
