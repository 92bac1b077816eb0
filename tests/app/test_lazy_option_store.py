"""The config store registers every option by name and makes an option's node when Hydra first reads it.

- A composition imports the modules of the options it chooses, not every fabric, algorithm and task.
- The node Hydra loads is the one `ConfigStore.store` makes from the option's schema (the eager way,
  as before), so composed configs are unchanged; every option of every group is checked.
- Listing a group's options (Hydra's own "available options", ``--help``) needs no node.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from ddlsim.app.config_store import register_configs
from ddlsim.app.lazy_store import open_mappings
from ddlsim.core.registry import ALL_REGISTRIES, REGISTRIES

OPTIONS = [(registry.group, name) for registry in ALL_REGISTRIES for name in registry.names()]


@pytest.mark.parametrize(("group", "name"), OPTIONS)
def test_each_lazy_node_equals_the_node_the_store_makes_eagerly(group, name):
    register_configs()
    loaded = ConfigStore.instance().load(f"{group}/{name}.yaml")
    eager = OmegaConf.structured(open_mappings(REGISTRIES[group].config_node(name)))
    assert (loaded.name, loaded.group, loaded.package, loaded.provider) == (f"{name}.yaml", group, None, "ddlsim")
    assert OmegaConf.to_yaml(loaded.node) == OmegaConf.to_yaml(eager)
    assert OmegaConf.get_type(loaded.node) is OmegaConf.get_type(eager)
    for key in loaded.node:  # open mappings stay open, schema keys stay closed
        assert OmegaConf.is_struct(loaded.node) == OmegaConf.is_struct(eager)
        child, eager_child = loaded.node._get_node(key), eager._get_node(key)
        assert OmegaConf.is_struct(child) == OmegaConf.is_struct(eager_child), key


def test_every_option_is_listed_before_any_is_loaded():
    store = ConfigStore.instance()
    register_configs()
    for registry in ALL_REGISTRIES:
        listed = {name.removesuffix(".yaml") for name in store.list(registry.group)}
        assert set(registry.names()) <= listed


PROBE = """
import json, sys
from ddlsim.app.runner import compose
config = compose(['experiment=single', 'fabric=ramp', 'collective=ring', 'task=jobs'])
assert config.fabric.name == 'ramp' and config.collective.name == 'ring'
print(json.dumps(sorted(name for name in sys.modules if name.startswith('ddlsim.network.fabrics.')
                        or name.startswith('ddlsim.network.collectives.') or name.startswith('ddlsim.tasks.'))))
"""


def test_a_composition_imports_only_the_chosen_options_modules():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "ddlsim.network.fabrics.ramp.fabric" in loaded and "ddlsim.network.collectives.ring" in loaded
    for other in ("ddlsim.network.fabrics.torus", "ddlsim.network.fabrics.sipac", "ddlsim.network.fabrics.bcube",
                  "ddlsim.network.collectives.bruck", "ddlsim.network.collectives.sipco", "ddlsim.tasks.profile"):
        assert other not in loaded, other
