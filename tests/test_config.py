"""Every option of every config group composes and builds."""

import pytest

import ddlsim
from ddlsim.app.config_store import GROUPS, group_options
from ddlsim.core.errors import ConfigError

OPTIONS = group_options()
CASES = [(group, option) for group in (*GROUPS, "experiment") for option in OPTIONS[group]]


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_option_composes_and_builds(group, option):
    components = ddlsim.build_components([f"{group}={option}"])
    assert components.task is not None and components.fabric is not None


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
