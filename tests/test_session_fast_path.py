"""`ddlsim.Session`'s fast path (scalar fields set on the working copy's typed nodes, issue 34) gives
exactly what a full composition gives: the same config, the same plain view and the same rows, on a
grid of overrides run one after another through one session (so each run also undoes the last);
`ddlsim.run` of a list of overrides, which runs through one process-wide Session, too."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from row_checks import same_rows

import ddlsim
from ddlsim.app import runner
from ddlsim.core.errors import ConfigError

BASE = ["experiment=single", "model=gpt", "model.d_model=2048", "model.heads=16", "model.layers=8",
        "model.global_batch=64", "parallel.tensor=2", "parallel.pipeline=2", "device=h100_sxm", "fabric=superpod"]
GRID = [
    (["parallel.data=4"], True),
    (["parallel.data=8", "parallel.micro_batch=2"], True),
    (["parallel.data=4", "model.global_batch=128"], True),
    (["model.global_batch='96'", "parallel.data=2"], True),  # a quoted number converted for an int field
    (["training.overlap=dp_backward", "parallel.data=4"], True),
    (["network.contention=off", "parallel.data=4"], True),
    (["fabric.nic_bandwidth=200Gbps", "parallel.data=4"], True),
    (["seed=7", "parallel.data=4"], False),  # a root key: composition's path
    (["fabric.label=my_superpod", "parallel.data=4"], False),  # a label: composition's path
    (["parallel.data=4"], True),  # back on the fast path after composition's path
    (["parallel.data=2", "model.precision=bf16"], True),
]


def test_the_fast_path_equals_a_full_composition_on_a_grid():
    session = ddlsim.Session(BASE)
    for overrides, fast in GRID:
        components = session._components(overrides, None, working=True)
        expected_config = ddlsim.compose([*BASE, *overrides])
        assert components.config == expected_config, overrides
        assert (components.plain is not None) == fast, overrides
        if fast:
            assert components.plain == OmegaConf.to_container(expected_config, resolve=True), overrides
        composed = runner.run(ddlsim.compose([*BASE, *overrides]))  # composition's path, no Session
        same_rows(session.run(overrides).rows, composed.rows)
        same_rows(ddlsim.run([*BASE, *overrides]).rows, composed.rows)  # the process-wide Session


@pytest.mark.parametrize("override", ["parallel.data=abc", "model.global_batch=1.5", "seed=null",
                                      "training.overlap=sometimes", "parallel.data=-4"])
def test_a_bad_value_on_the_fast_path_raises_what_composition_raises(override):
    session = ddlsim.Session(BASE)
    first = session.run(["parallel.data=4"]).rows
    with pytest.raises(ConfigError) as expected:
        runner.run(ddlsim.compose([*BASE, override]))
    with pytest.raises(ConfigError) as got:
        session.run([override])
    assert str(got.value) == str(expected.value)
    assert session.run(["parallel.data=4"]).rows == first  # the refused value left nothing behind
