"""The profile store: exact and nearest lookups, one device only, files read once."""

import os

import pytest
from compute_rows import layer, write_profile

from ddlsim.compute.store import ProfileStore, load_file, shape_distance
from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ShardSignature

DEVICE = "Test GPU 80GB"


def test_exact_and_nearest(tmp_path):
    for d_model, flop in ((64, 1e9), (128, 4e9), (256, 16e9)):
        write_profile(tmp_path, DEVICE, layer(d_model), "forward", flop / 1e12, flop)
    store = ProfileStore([tmp_path], DEVICE)
    assert len(store) == 3
    assert store.exact(layer(128), "forward").time_s == pytest.approx(4e-3)
    assert store.exact(layer(128), "backward") is None
    assert store.exact(layer(100), "forward") is None
    assert store.nearest(layer(100), "forward", 3e9, 0).signature == layer(128)
    assert store.nearest(layer(512), "forward", 60e9, 0).signature == layer(256)
    assert store.nearest(layer(64, batch=3), "forward", 1.5e9, 0).signature == layer(64)


def test_nearest_keeps_precision_checkpointing_and_phase(tmp_path):
    write_profile(tmp_path, DEVICE, layer(64), "forward", 1e-3, 1e9)
    store = ProfileStore([tmp_path], DEVICE)
    assert store.nearest(layer(64, precision="bf16"), "forward", 1e9, 0) is None
    assert store.nearest(layer(64, checkpointing=False), "forward", 1e9, 0) is None
    assert store.nearest(layer(64), "backward", 1e9, 0) is None
    assert store.nearest(layer(64, kind="dlrm_shard"), "forward", 1e9, 0) is None


def test_another_devices_rows_are_an_error_not_a_substitute(tmp_path):
    path = write_profile(tmp_path, "Other GPU", layer(64), "forward", 1e-3, 1e9)
    assert ProfileStore([tmp_path], DEVICE).exact(layer(64), "forward") is None  # other directory: unseen
    target = tmp_path / "test-gpu-80gb"
    target.mkdir()
    os.replace(path, target / path.name)  # a file moved into the wrong device's directory
    with pytest.raises(ConfigError, match="Other GPU"):
        ProfileStore([tmp_path], DEVICE)


def test_earlier_directory_wins(tmp_path):
    user, shipped = tmp_path / "user", tmp_path / "shipped"
    write_profile(user, DEVICE, layer(64), "forward", 2e-3, 1e9)
    write_profile(shipped, DEVICE, layer(64), "forward", 1e-3, 1e9)
    assert ProfileStore([user, shipped], DEVICE).exact(layer(64), "forward").time_s == 2e-3


def test_file_is_parsed_once_and_again_after_a_rewrite(tmp_path):
    path = write_profile(tmp_path, DEVICE, layer(64), "forward", 1e-3, 1e9)
    assert load_file(path) is load_file(path)
    write_profile(tmp_path, DEVICE, layer(64), "forward", 5e-3, 1e9)
    os.utime(path, ns=(1, 1))  # make sure the modification time changes even on coarse clocks
    assert ProfileStore([tmp_path], DEVICE).exact(layer(64), "forward").time_s == 5e-3


def test_nearest_means_nearest_shape_not_nearest_flops(tmp_path):
    write_profile(tmp_path, DEVICE, layer(128, batch=4), "forward", 4e-3, 4e9)
    write_profile(tmp_path, DEVICE, layer(1024, batch=1), "forward", 2e-3, 2e9)  # same FLOPs, other shape
    assert ProfileStore([tmp_path], DEVICE).nearest(layer(128, batch=2), "forward", 2e9, 0) == \
        ProfileStore([tmp_path], DEVICE).exact(layer(128, batch=4), "forward")


def test_shape_ties_go_to_closer_work_then_smaller_key(tmp_path):
    def flagged(flag):
        return ShardSignature("megatron_layer", (("d_model", 128), (flag, 1)), 2, "fp16", True)

    write_profile(tmp_path, DEVICE, flagged("zeta"), "forward", 1e-3, 1e9)
    write_profile(tmp_path, DEVICE, flagged("alpha"), "forward", 3e-3, 3e9)
    store = ProfileStore([tmp_path], DEVICE)
    target = ShardSignature("megatron_layer", (("d_model", 128),), 2, "fp16", True)
    assert shape_distance(target, flagged("zeta")) == shape_distance(target, flagged("alpha")) > 0
    assert store.nearest(target, "forward", 1.1e9, 0).signature == flagged("zeta")   # closer work
    assert store.nearest(target, "forward", 3**0.5 * 1e9, 0).signature == flagged("alpha")  # equal: key
