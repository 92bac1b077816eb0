"""A sweep's jobs reuse the objects of groups whose config is unchanged, and only those."""

import ddlsim
from ddlsim.app.group_objects import GroupObjects
from ddlsim.app.runner import build_components, run_point

BASE = ["experiment=single"]


def test_equal_group_configs_share_their_object_and_changed_ones_do_not():
    objects = GroupObjects()
    first = build_components(ddlsim.compose([*BASE, "model.target_loss=2.5"]), objects=objects)
    second = build_components(ddlsim.compose([*BASE, "model.target_loss=2.0"]), objects=objects)
    assert second.fabric is first.fabric and second.compute is first.compute and second.task is first.task
    assert second.model is not first.model
    other = build_components(ddlsim.compose([*BASE, "fabric.bandwidth=100Gbps"]), objects=objects)
    assert other.fabric is not first.fabric
    assert build_components(ddlsim.compose([*BASE, "device=h100_sxm"]), objects=objects).compute is not first.compute


def test_rows_with_reused_objects_equal_rows_built_afresh():
    objects = GroupObjects()
    for overrides in (["model.target_loss=2.5"], ["fabric=superpod", "model.target_loss=2.2"],
                      ["model.target_loss=2.2"], ["fabric.bandwidth=fast"]):
        config = ddlsim.compose([*BASE, *overrides])
        assert run_point(config, objects=objects).rows == run_point(config).rows


def test_another_assumption_set_builds_afresh():
    objects = GroupObjects()
    config = ddlsim.compose([*BASE, "fabric=ramp", "assumptions=ramp_paper"])
    assert build_components(config, objects=objects).fabric is not build_components(config, objects=objects).fabric
