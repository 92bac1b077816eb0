"""Device names that keep profiles of different machines apart."""

import pytest

from ddlsim.compute.identity import cpu_name, device_slug, local_identity
from ddlsim.core.errors import ConfigError

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8

processor\t: 1
model name\t: something else
"""


def test_cpu_name_has_model_numbers_and_threads():
    assert cpu_name(4, CPUINFO) == "Intel(R) Xeon(R) Platinum 8480+ (family 6, model 143, stepping 8), 4 threads"
    assert cpu_name(1, CPUINFO).endswith(", 1 thread")


def test_two_thread_counts_are_two_devices():
    assert device_slug(cpu_name(1, CPUINFO)) != device_slug(cpu_name(2, CPUINFO))


def test_slug_of_gpu_names():
    assert device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert device_slug("NVIDIA A100-SXM4-80GB") == "nvidia-a100-sxm4-80gb"
    with pytest.raises(ConfigError):
        device_slug("---")


def test_local_cpu_identity():
    identity = local_identity("cpu")
    assert identity.torch_device == "cpu" and "thread" in identity.name and identity.torch_version
    with pytest.raises(ConfigError, match="torch_device"):
        local_identity("mps")
