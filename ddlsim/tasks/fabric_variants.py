"""The configured fabric rebuilt with other values, for tasks that sweep a fabric parameter.

Bandwidth-matched comparisons (RAMP Fig. 19: every system at the same node capacity C) give
each fabric the same bandwidth through its own keys. The mapping says which keys of a fabric
kind carry C and the share of C each gets (configs only, e.g. RAMP's 32 transceiver groups:
``{ramp: {line_rate: 0.03125}, superpod: {node_bandwidth: 1.0, nic_bandwidth: 1.0}}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import OmegaConf

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS


def fabric_node(config: Any) -> dict[str, Any]:
    """The composed ``fabric`` section as a plain dict (``label`` dropped: it names rows, not the fabric)."""
    node = OmegaConf.to_container(config.fabric, resolve=True) if OmegaConf.is_config(config.fabric) \
        else dict(config.fabric)
    assert isinstance(node, dict)
    node.pop("label", None)
    return node


def check_bandwidth_keys(mapping: Mapping[str, Any], key: str = "bandwidth_keys") -> dict[str, dict[str, float]]:
    """Validate ``{fabric kind: {key: share of the node bandwidth}}``."""
    checked = {}
    for kind, keys in dict(mapping).items():
        if kind not in FABRICS:
            raise ConfigError(f"{key}.{kind}", kind, f"unknown fabric; choose from {', '.join(FABRICS.names())}")
        if not isinstance(keys, Mapping) or not keys:
            raise ConfigError(f"{key}.{kind}", keys, "must map the fabric's bandwidth keys to shares, "
                                                      "e.g. {node_bandwidth: 1.0}")
        shares = {}
        for name, share in keys.items():
            if not isinstance(share, (int, float)) or isinstance(share, bool) or not share > 0:
                raise ConfigError(f"{key}.{kind}.{name}", share, "must be a positive share of the node bandwidth")
            shares[str(name)] = float(share)
        checked[kind] = shares
    return checked


def with_node_bandwidth(node: Mapping[str, Any], bandwidth_bps: float, keys: Mapping[str, Mapping[str, float]],
                        key: str = "node_bandwidths") -> Any:
    """The fabric of `node` with every key of its kind set to its share of `bandwidth_bps`."""
    kind = str(node["name"])
    if kind not in keys:
        raise ConfigError(key, units.format_bandwidth_bps(bandwidth_bps),
                          f"fabric {kind} has no entry in bandwidth_keys; say which of its keys carry the node "
                          f"bandwidth (known: {', '.join(keys) or 'none'})")
    values = {name: f"{bandwidth_bps * share!r}bps" for name, share in keys[kind].items()}
    return FABRICS.build({**node, **values}, key="fabric")


def parse_bandwidths(values: Sequence[str], key: str) -> tuple[float, ...]:
    return tuple(units.parse_bandwidth_bps(value, key) for value in values)
