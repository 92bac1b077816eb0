"""Captured programs under contention: the program's own streams decide which collectives are in
flight together, and with network.contention on they share the fabric (docs/contention.md)."""

from __future__ import annotations

from functools import partial

import pytest

import ddlsim
from ddlsim.training.trace import trace_events


@pytest.fixture(scope="module")
def llama3_8b_fsdp_tp8():
    from examples.llama_fsdp_tp import build

    return ddlsim.capture(partial(build, shape="llama3_8b", num_hidden_layers=2), mesh_shape=(8, 8),
                          mesh_dim_names=("dp", "tp"))


def test_llama3_8b_fsdp_tp8_on_superpod_exposes_at_least_as_much_communication_with_contention(llama3_8b_fsdp_tp8):
    alone = ddlsim.simulate(llama3_8b_fsdp_tp8, fabric="superpod", contention=False)
    shared = ddlsim.simulate(llama3_8b_fsdp_tp8, fabric="superpod", contention=True)
    off, on = alone.row(), shared.row()
    assert on["exposed_comm_time_s"] >= off["exposed_comm_time_s"] * (1 - 1e-12)
    assert on["iteration_time_s"] >= off["iteration_time_s"] * (1 - 1e-12)
    # FSDP's prefetch stream puts data-parallel gathers beside tensor-parallel collectives: the row
    # says how much each kind was stretched, and the trace shows every collective's time alone.
    slowdowns = {key: value for key, value in on.items() if key.endswith("_slowdown")}
    assert slowdowns and all(value >= 1 - 1e-12 for value in slowdowns.values())
    assert on["comm_alone_time_s"] <= on["comm_time_s"] * (1 + 1e-12)
    assert not any(key.endswith("_slowdown") for key in off)
    events = [event for event in trace_events(shared.graph, shared.placement)["traceEvents"]
              if event.get("cat") == "collective"]
    assert events and all("alone_s" in event["args"] for event in events)
