from dataclasses import dataclass

import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS, Registry


@dataclass
class _WidgetConfig:
    name: str = "widget"
    width: int = 3


def _make_registry() -> Registry:
    registry = Registry("gadget")

    @registry.register("widget", _WidgetConfig)
    @dataclass(frozen=True)
    class Widget:
        """A test widget."""

        width: int

        @classmethod
        def from_config(cls, config: _WidgetConfig) -> "Widget":
            if config.width < 1:
                raise ConfigError("width", config.width, "must be >= 1")
            return cls(config.width)

    return registry


def test_build_uses_schema_defaults_and_overrides():
    registry = _make_registry()
    assert registry.build({"name": "widget"}).width == 3
    assert registry.make("widget", width=7).width == 7
    assert registry.entry("widget").summary == "A test widget."


@pytest.mark.parametrize(
    ("config", "key", "rule"),
    [({"name": "gizmo"}, "gadget.name", "unknown gadget; choose one of widget"),
     ({"name": "widget", "colour": "red"}, "gadget.colour", "unknown key"),
     ({"name": "widget", "width": "wide"}, "gadget.width", "could not be converted"),
     ({"name": "widget", "width": 0}, "gadget.width", "must be >= 1"),
     ({"width": 2}, "gadget.name", "is required")],
)
def test_errors_name_the_full_key(config, key, rule):
    with pytest.raises(ConfigError) as caught:
        _make_registry().build(config)
    assert caught.value.key == key
    assert rule in str(caught.value)
    assert "\n" not in str(caught.value)


def test_schema_without_name_field_is_refused():
    @dataclass
    class Nameless:
        width: int = 1

    with pytest.raises(TypeError, match="'name' field"):
        Registry("gadget").register("nameless", Nameless)


def test_global_fabric_registry_builds_with_unit_strings():
    fabric = FABRICS.make("ideal", bandwidth="800Gbps", latency="500ns")
    assert fabric.bandwidth_bps == 800e9 and fabric.latency_s == 5e-7
    with pytest.raises(ConfigError, match=r"fabric\.bandwidth = '-5Gbps': must be positive"):
        FABRICS.make("ideal", bandwidth="-5Gbps")
