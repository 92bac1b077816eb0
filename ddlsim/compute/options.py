"""The compute group's options built into a `ComputeModel`: the group has no registry, because its
factory needs the device, but it reads options as every group does (`ddlsim.core.registry.build`):
``default`` (the schema's defaults), a YAML variant in ``configs/compute/`` with its defaults chain
resolved, a config mapping, or a model already built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ddlsim.compute.devices import DeviceSpec
from ddlsim.compute.model import ComputeConfig, ComputeModel
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import omegaconf_error_to_config_error, option_settings

GROUP = "compute"


def build_compute(spec: Any, device: DeviceSpec, *, key: str = GROUP) -> Any:
    """The compute model `spec` describes on `device`: None or an option name, a config mapping (or
    `ComputeConfig`), or an object already built, returned as it is. Errors name `key`."""
    if spec is None:
        spec = {}
    if isinstance(spec, str):
        spec = option_settings(GROUP, spec, key=key)
    if isinstance(spec, (int, float, bytes, list, tuple, set)):  # bool is an int
        raise ConfigError(key, spec, "must be an option name, a config mapping or a built compute model")
    if not isinstance(spec, (Mapping, DictConfig, ComputeConfig)):
        return spec
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ComputeConfig), spec)
        return ComputeModel.from_config(OmegaConf.to_object(merged), device)
    except OmegaConfBaseException as error:
        raise omegaconf_error_to_config_error(error, key) from None
    except ConfigError as error:
        raise error.under(key) from None
