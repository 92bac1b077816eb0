"""Every option of every config group composes and builds, alike on the command line, in a
`ddlsim.Session` and through `ddlsim.core.registry.build` (tests/test_build.py has the other doors)."""

from typing import Any

import pytest

import ddlsim
from ddlsim.app.config_store import GROUPS, group_options
from ddlsim.compute.model import ComputeModel
from ddlsim.compute.options import build_compute
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import REGISTRIES, build

OPTIONS = group_options()
CASES = [(group, option) for group in (*GROUPS, "experiment") for option in OPTIONS[group]]
ATTRIBUTE = {"model": "model", "parallel": "parallel", "device": "device", "compute": "compute", "fabric": "fabric",
             "collective": "algorithm", "task": "task"}
SESSION = ddlsim.Session()


def _same(component: Any) -> Any:
    """What two builds of one option share (a compute model's caches are its own)."""
    if isinstance(component, ComputeModel):
        return {key: value for key, value in vars(component).items() if not key.startswith("_")}
    return component


def _built(group: str, option: str) -> Any:
    if group == "compute":
        return build_compute(option, build("device", "a100_80gb"))  # the default experiment's device
    return build(group, option)


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_option_composes_and_builds(group, option):
    components = ddlsim.build_components([f"{group}={option}"])
    assert components.task is not None and components.fabric is not None
    if group not in ATTRIBUTE:  # training (a section the task reads), experiment (a whole config)
        return
    chosen = _same(getattr(components, ATTRIBUTE[group]))
    assert _same(getattr(SESSION.components([f"{group}={option}"]), ATTRIBUTE[group])) == chosen
    if group in REGISTRIES or group == "compute":
        assert _same(_built(group, option)) == chosen


def test_every_group_has_options():
    for group in GROUPS:
        assert OPTIONS[group], f"config group {group} has no options"


def test_run_without_hydra_returns_rows():
    result = ddlsim.run(["experiment=single", "task=collective", "task.sizes=[1MB]", "task.num_ranks=[8]"])
    assert len(result.rows) == 1
    assert result.rows[0]["size_bytes"] == 10**6 and result.rows[0]["time_s"] > 0


def test_run_accepts_a_plain_mapping():
    config = ddlsim.compose()
    plain = {key: config[key] for key in GROUPS}
    assert ddlsim.run(plain).rows == ddlsim.run(config).rows


def test_typo_in_a_mapping_is_a_config_error():
    with pytest.raises(ConfigError, match="fabric.bandwith"):
        ddlsim.run({**{key: ddlsim.compose()[key] for key in GROUPS}, "fabric": {"name": "ideal", "bandwith": "1Gbps"}})


def test_value_error_is_raised_before_the_task_runs():
    with pytest.raises(ConfigError, match=r"fabric.bandwidth = '-5Gbps': must be positive"):
        ddlsim.build_components(["fabric=ideal", "fabric.bandwidth=-5Gbps"])


def test_same_config_same_rows():
    assert ddlsim.run().rows == ddlsim.run().rows
