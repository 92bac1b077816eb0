"""One `build()` (issue 31 step 4): every shipped option of every group, through every door that
takes the group, builds the same component as `ddlsim.core.registry.build` (or, for compute,
`ddlsim.compute.options.build_compute`). The command line and `ddlsim.Session` are the doors of
tests/test_config.py (which composes every option anyway); `ddlsim.simulate` is the door of
tests/capture/test_simulate_options.py (it needs torch)."""

from __future__ import annotations

import contextlib

import pytest

import ddlsim
from ddlsim.app.config_store import GROUPS, group_options
from ddlsim.compute.options import build_compute
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.options import variant_settings
from ddlsim.core.registry import REGISTRIES, build, option_names, option_settings
from ddlsim.tasks.job_specs import build_job_model, parse_jobs


def test_the_shipped_options_are_the_command_line_s():
    listed = group_options()
    assert {group: option_names(group) for group in GROUPS} == {group: listed[group] for group in GROUPS}


def test_no_yaml_variant_shadows_a_registered_name():
    for group, registry in REGISTRIES.items():
        assert not [name for name in registry.names() if variant_settings(group, name) is not None], group


FABRICS = option_names("fabric")
COLLECTIVES = option_names("collective")
DEVICES = option_names("device")


@pytest.mark.parametrize("option", FABRICS)
def test_the_network_api_builds_every_fabric_option(option):
    assert ddlsim.make_fabric(option) == build("fabric", option)
    try:
        estimate = ddlsim.estimate_collective("all_reduce", 10**6, 2, fabric=option, algorithm="ring")
    except InfeasibleError:
        return  # built, and says why it cannot run this call
    assert estimate.time_s > 0


@pytest.mark.parametrize("option", COLLECTIVES)
def test_the_network_api_builds_every_collective_option(option):
    estimator = ddlsim.CollectiveEstimator(build("fabric", "superpod"), option)
    assert estimator.algorithm == build("collective", option)
    with contextlib.suppress(InfeasibleError):  # built, and says why it cannot run this call
        ddlsim.estimate_collective("all_reduce", 10**6, 8, fabric="superpod", algorithm=option)


@pytest.mark.parametrize("option", DEVICES)
def test_the_network_api_takes_every_device_option(option):
    assert ddlsim.estimate_collective("all_reduce", 10**6, 8, fabric="superpod", device=option).time_s > 0


@pytest.mark.parametrize("option", option_names("model"))
def test_the_jobs_task_builds_every_model_option(option):
    [spec] = parse_jobs([option], None, 0, None, prefix="task")
    model, _ = build_job_model(spec, "task.jobs[0]")
    assert model == build("model", option)
    assert spec.label == option


def test_best_no_direct_is_best_without_the_direct_exchange_at_every_door():
    variant = build("collective", "best_no_direct")
    assert variant == build("collective", {"name": "best", "exclude": ["direct"]})
    assert ddlsim.CollectiveEstimator(build("fabric", "ideal"), "best_no_direct").algorithm == variant
    assert ddlsim.build_components(["collective=best_no_direct"]).algorithm == variant


def test_build_takes_a_name_a_mapping_a_node_or_a_built_object():
    fabric = build("fabric", "superpod_1to1")
    assert build("fabric", option_settings("fabric", "superpod_1to1")) == fabric
    assert build("fabric", fabric) is fabric
    assert build("fabric", "superpod", nic_bandwidth="2.4Tbps").nic_bandwidth_bps == 2.4e12
    assert build("fabric", "superpod_1to1", num_nodes=1024).num_nodes == 1024


@pytest.mark.parametrize(("group", "spec", "key", "rule"), [
    ("collective", "best_no_drect", "collective", "unknown collective algorithm; choose one of best, best_no_direct,"),
    ("fabric", "superpod_2to1", "fabric", "unknown fabric; choose one of bcube, bcube_64,"),
    ("model", "gpt3", "model", "unknown model; choose one of chakra, dlrm, gpt, gpt2,"),
    ("device", "a100", "device", "unknown device; choose one of "),
    ("fabric", 3, "fabric", "must be an option name, a config mapping or a built fabric"),
])
def test_an_unknown_name_is_one_line_naming_the_key_and_the_choices(group, spec, key, rule):
    with pytest.raises(ConfigError) as caught:
        build(group, spec)
    assert caught.value.key == key and rule in str(caught.value) and "\n" not in str(caught.value)


def test_an_unknown_compute_option_names_its_choices():
    with pytest.raises(ConfigError, match=r"^compute = 'rooflin': unknown compute option; choose one of "
                                          r"a100_megatron, default, measured, roofline$"):
        build_compute("rooflin", build("device", "h100_sxm"))
