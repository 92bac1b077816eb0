"""Name registries: a name in a config maps to a typed schema and to the class built from it.

Each room registers its own entries next to the class, for example::

    @FABRICS.register("ideal", IdealSwitchConfig, summary="one non-blocking switch")
    class IdealSwitch:
        @classmethod
        def from_config(cls, config: IdealSwitchConfig) -> "IdealSwitch": ...

A schema is a dataclass whose ``name`` field defaults to the registered name. `Registry.build`
checks a config (a dict, an OmegaConf node or a schema instance) against that schema, so that an
unknown key, a wrong type or a bad value is a `ConfigError` naming the full key before any work
starts, and then calls the factory. Unknown keys are refused however they got in, including
Hydra's ``+key=value`` (which adds a key even to a typed node); only fields typed as a mapping
(``dict[str, ...]``) take keys of the user's choosing.

The ``fabric`` and ``model`` groups also accept `LABEL_KEY` (``label``): what result rows call
the option. A YAML variant sets it to its own name (``configs/fabric/superpod_1to1.yaml`` has
``label: superpod_1to1``); empty means the registered name.

`build(group, spec)` is the one way from what a user wrote to a component: an option name (a
registered name or a YAML variant in ``configs/<group>/``, `ddlsim.core.options`), a config mapping
or an object already built. The command line, `ddlsim.Session`, `ddlsim.simulate`, the network
API and the jobs task all build through it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from ddlsim.core.catalog import OPTIONS
from ddlsim.core.errors import NO_VALUE, ConfigError
from ddlsim.core.options import SCHEMA_OPTIONS, variant_names, variant_settings

T = TypeVar("T")

LABEL_KEY = "label"


def _field_types(schema: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(schema)
    except (NameError, TypeError):  # an annotation that cannot be resolved: compare names only
        return {item.name: Any for item in dataclasses.fields(schema)}


def unknown_key_error(node: Any, schema: type, prefix: str, extra: tuple[str, ...] = ()) -> ConfigError | None:
    """A `ConfigError` for the first key of `node` that `schema` (a dataclass) does not define.

    Nested dataclass fields are checked too; mapping fields (``dict[str, ...]``) are the
    documented places where keys are the user's own, and are not.
    """
    if not isinstance(node, (DictConfig, Mapping)):
        return None
    types = _field_types(schema)
    known = [*types, *extra]
    for name in node:
        key = str(name)
        full = f"{prefix}.{key}" if prefix else key
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(known)}"
            return ConfigError(full, NO_VALUE, f"unknown key for {schema.__name__}{hint}")
        field_type = types.get(key)
        if dataclasses.is_dataclass(field_type):
            nested = unknown_key_error(node.get(key), field_type, full)
            if nested is not None:
                return nested
    return None


@dataclass(frozen=True)
class Entry(Generic[T]):
    group: str
    name: str
    schema: type
    factory: Callable[[Any], T]
    summary: str

    def build(self, config: Any) -> T:
        from_config = getattr(self.factory, "from_config", None)
        return from_config(config) if callable(from_config) else self.factory(config)


def omegaconf_error_to_config_error(error: OmegaConfBaseException, prefix: str) -> ConfigError:
    """Turn an OmegaConf validation error into a one-line `ConfigError` naming the full key."""
    key = str(getattr(error, "full_key", "") or "")
    if prefix and not key.startswith(prefix):
        key = f"{prefix}.{key}" if key else prefix
    if isinstance(error, (ConfigKeyError, ConfigAttributeError)) and " not in " in str(error):
        schema = getattr(error, "object_type_str", None) or "this group"
        parent = getattr(error, "parent_node", None)
        known = ", ".join(str(name) for name in parent if name != "hydra") if isinstance(parent, DictConfig) else ""
        rule = f"unknown key for {schema}" + (f"; known keys: {known}" if known else "")
        return ConfigError(key, NO_VALUE, rule)
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    rule = first_line[0].lower() + first_line[1:] if first_line else first_line
    return ConfigError(key, getattr(error, "value", None), rule)


class Registry(Generic[T]):
    """All registered choices of one config group (``fabric``, ``collective``, ``model``, ...)."""

    def __init__(self, group: str, noun: str | None = None, *, labelled: bool = False,
                 options: Mapping[str, str] | None = None) -> None:
        self.group = group
        self.noun = noun or group
        self.labelled = labelled  # options may carry a `label` for result rows
        self.options = dict(options or {})  # name -> the module that registers it (`ddlsim.core.catalog`)
        self._entries: dict[str, Entry[T]] = {}
        self._nodes: dict[str, type] = {}

    def register(self, name: str, schema: type, *, summary: str = "") -> Callable[[Any], Any]:
        if not dataclasses.is_dataclass(schema):
            raise TypeError(f"schema for {self.group} {name!r} must be a dataclass, got {schema!r}")
        fields = {f.name: f for f in dataclasses.fields(schema)}
        if "name" not in fields:
            raise TypeError(f"schema {schema.__name__} for {self.group} {name!r} needs a 'name' field")

        def decorator(factory: Any) -> Any:
            if name in self._entries and self._entries[name].factory is not factory:
                raise TypeError(f"{self.group} {name!r} is registered twice")
            docstring_lines = (factory.__doc__ or "").strip().splitlines()
            text = summary or (docstring_lines[0] if docstring_lines else "")
            self._entries[name] = Entry(self.group, name, schema, factory, text)
            return factory

        return decorator

    def names(self) -> list[str]:
        return sorted({*self._entries, *self.options})

    def is_config(self, value: Any) -> bool:
        """True for what `build` validates: a mapping, an OmegaConf node or a registered schema's instance."""
        schemas = tuple(entry.schema for entry in self._entries.values())
        return isinstance(value, (Mapping, DictConfig)) or (not isinstance(value, type) and isinstance(value, schemas))

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.options

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self.entry(name) for name in self.names())

    def _load(self, name: str) -> None:
        """Import the module that registers option `name` (the catalog's), once."""
        module = self.options.get(name)
        if module is not None and name not in self._entries:
            importlib.import_module(module)
            if name not in self._entries:
                raise TypeError(f"{module} is listed for {self.group} {name!r} in ddlsim/core/catalog.py but does "
                                "not register it")

    def entry(self, name: str) -> Entry[T]:
        if name not in self._entries:
            if name not in self.options:
                known = ", ".join(self.names()) or "(none registered)"
                raise ConfigError(f"{self.group}.name", name, f"unknown {self.noun}; choose one of {known}")
            self._load(name)
        return self._entries[name]

    def default_config(self, name: str) -> Any:
        """The schema instance with every default, named `name`."""
        entry = self.entry(name)
        return entry.schema(name=name)

    def config_node(self, name: str) -> Any:
        """What Hydra's ConfigStore holds for option `name`: the defaults, plus ``label`` if labelled."""
        entry = self.entry(name)
        if not self.labelled:
            return entry.schema(name=name)
        if name not in self._nodes:
            # A subclass made at run time; launchers ship it to workers with cloudpickle, by value.
            labelled = dataclasses.make_dataclass(
                entry.schema.__name__, [(LABEL_KEY, str, dataclasses.field(default=""))], bases=(entry.schema,))
            labelled.__module__ = entry.schema.__module__
            self._nodes[name] = labelled
        return self._nodes[name](name=name)

    def validate(self, config: Any, *, key: str | None = None) -> Any:
        """Check `config` against its schema and return the schema instance (a dataclass)."""
        prefix = self.group if key is None else key
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            config = OmegaConf.structured(config)
        if isinstance(config, Mapping) and not isinstance(config, DictConfig):
            config = OmegaConf.create(dict(config))
        if not isinstance(config, DictConfig):
            raise ConfigError(prefix, config, f"must be a mapping with a 'name' key naming a {self.noun}")
        name = config.get("name")
        if name is None:
            raise ConfigError(f"{prefix}.name", None, f"is required; choose one of {', '.join(self.names())}")
        entry = self.entry(str(name))
        extra = (LABEL_KEY,) if self.labelled else ()
        unknown = unknown_key_error(config, entry.schema, prefix, extra)
        if unknown is not None:
            raise unknown
        try:
            plain = OmegaConf.to_container(config, resolve=True)
            assert isinstance(plain, dict)
            if self.labelled:
                plain.pop(LABEL_KEY, None)
            typed = OmegaConf.merge(OmegaConf.structured(entry.schema(name=entry.name)), plain)
            instance = OmegaConf.to_object(typed)
        except OmegaConfBaseException as error:
            raise omegaconf_error_to_config_error(error, prefix) from None
        except ConfigError as error:
            raise error.under(prefix) from None
        return instance

    def build(self, config: Any, *, key: str | None = None) -> T:
        """Validate `config` and build the registered object from it."""
        prefix = self.group if key is None else key
        instance = self.validate(config, key=prefix)
        try:
            return self.entry(instance.name).build(instance)
        except ConfigError as error:
            raise error.under(prefix) from None

    def make(self, name: str, **params: Any) -> T:
        """Build by name with keyword parameters spelled as in the YAML config."""
        return self.build({"name": name, **params})


FABRICS: Registry[Any] = Registry("fabric", labelled=True, options=OPTIONS["fabric"])
ALGORITHMS: Registry[Any] = Registry("collective", "collective algorithm", options=OPTIONS["collective"])
MODELS: Registry[Any] = Registry("model", labelled=True, options=OPTIONS["model"])
DEVICES: Registry[Any] = Registry("device", options=OPTIONS["device"])
TASKS: Registry[Any] = Registry("task", options=OPTIONS["task"])

ALL_REGISTRIES: tuple[Registry[Any], ...] = (FABRICS, ALGORITHMS, MODELS, DEVICES, TASKS)

REGISTRIES: dict[str, Registry[Any]] = {registry.group: registry for registry in ALL_REGISTRIES}


def option_names(group: str) -> list[str]:
    """Every shipped option of `group`: its registered names (or schema defaults) and its YAML variants."""
    registry = REGISTRIES.get(group)
    schema_defaults = [SCHEMA_OPTIONS[group]] if group in SCHEMA_OPTIONS else []
    return sorted({*(registry.names() if registry is not None else schema_defaults), *variant_names(group)})


def option_settings(group: str, name: str, *, key: str | None = None) -> dict[str, Any]:
    """The config of option `name` of `group` as a plain mapping: ``{"name": name}`` for a registered
    name, ``{}`` for a schema group's defaults, a YAML variant's settings with its defaults chain
    resolved. An unknown name is a `ConfigError` naming `key` (default: the group) and the choices."""
    registry = REGISTRIES.get(group)
    registered = registry.names() if registry is not None else []
    if name in registered:
        return {"name": name}
    if name == SCHEMA_OPTIONS.get(group):
        return {}
    settings = variant_settings(group, name, registered, key=key)
    where = group if key is None else key
    if settings is None:
        noun = registry.noun if registry is not None else f"{group} option"
        raise ConfigError(where, name, f"unknown {noun}; choose one of {', '.join(option_names(group))}")
    if registry is not None and "name" not in settings:
        raise ConfigError(where, name, f"configs/{group}/{name}.yaml names no registered {registry.noun} in its "
                                       "defaults")
    return settings


_NOT_A_COMPONENT = (bool, int, float, bytes, list, tuple, type(None))


def build(group: str, spec: Any, *, key: str | None = None, **params: Any) -> Any:
    """The component of config group `group` that `spec` describes: an option name (a registered
    name or a YAML variant, `option_settings`), a config mapping (a dict, an OmegaConf node or a
    schema instance, with ``name``), or an object already built, returned as it is. `params` (YAML
    names and unit strings, ``nic_bandwidth="2.4Tbps"``) override an option's or a mapping's
    settings. Errors are `ConfigError`s naming `key` (default: the group). The compute group,
    whose factory needs the device, builds through `ddlsim.compute.options.build_compute`."""
    registry = REGISTRIES.get(group)
    if registry is None:
        raise ConfigError("group", group, f"has no registry; choose one of {', '.join(REGISTRIES)}")
    where = group if key is None else key
    if isinstance(spec, str):
        spec = option_settings(group, spec, key=where)
    if params:
        if isinstance(spec, DictConfig):
            spec = OmegaConf.to_container(spec, resolve=True)
        if not isinstance(spec, Mapping):
            raise ConfigError(where, type(spec).__name__, "takes parameters only with an option name or a mapping")
        spec = {**spec, **params}
    if registry.is_config(spec):
        return registry.build(spec, key=key)
    if isinstance(spec, _NOT_A_COMPONENT):
        raise ConfigError(where, spec, f"must be an option name, a config mapping or a built {registry.noun}")
    return spec
