"""The command line as the docs print it, turned into what Hydra parses.

Two things differ from Hydra's own parsing:

- ``-m`` / ``--multirun`` may stand anywhere (``ddlsim fabric=ramp,superpod -m training.trace=true``);
  Hydra's argparse takes it only before the overrides.
- The default job is a comparison sweep of the default model (``experiment=quickstart``: two
  target losses). Choosing a model that has none of the keys that sweep sets (``model=program``,
  ``model=dlrm``, ``model=hf``) without naming an experiment runs that model as
  ``experiment=single`` does, instead of failing on the sweep's unknown key.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from ddlsim.app.config_store import config_dir

MULTIRUN_FLAGS = ("-m", "--multirun")
_EXPERIMENT_KEYS = ("experiment=", "+experiment=", "++experiment=")
_MODEL_PREFIX = "model."


def normalise_arguments(arguments: Sequence[str]) -> list[str]:
    """`arguments` with the multirun flag first and ``experiment=single`` added where the default
    experiment's sweep does not apply to the chosen model."""
    flags = [argument for argument in arguments if argument in MULTIRUN_FLAGS]
    rest = [argument for argument in arguments if argument not in MULTIRUN_FLAGS]
    if not any(argument.startswith(_EXPERIMENT_KEYS) for argument in rest) and _needs_single_run(rest):
        rest = ["experiment=single", *rest]
    return [*flags[:1], *rest]


def _needs_single_run(arguments: Sequence[str]) -> bool:
    swept = _default_swept_model_fields()
    if not swept:
        return False
    choices = [choice for argument in arguments if argument.startswith("model=")
               for choice in argument.removeprefix("model=").split(",") if choice]
    return any(not swept <= _model_fields(choice) for choice in choices)


@cache
def _default_swept_model_fields() -> frozenset[str]:
    """The model fields the default experiment sweeps (``model.target_loss`` -> target_loss)."""
    defaults = OmegaConf.load(config_dir() / "config.yaml").get("defaults", [])
    experiment = next((entry["experiment"] for entry in defaults
                       if OmegaConf.is_dict(entry) and "experiment" in entry), None)
    path = config_dir() / "experiment" / f"{experiment}.yaml"
    if experiment is None or not path.is_file():
        return frozenset()
    params = OmegaConf.select(OmegaConf.load(path), "hydra.sweeper.params", default=None) or {}
    return frozenset(key.removeprefix(_MODEL_PREFIX) for key in params if key.startswith(_MODEL_PREFIX))


@cache
def _model_fields(choice: str) -> frozenset[str]:
    """The keys of a model option: its registered schema, or its YAML file and the option it extends.
    An unknown option has all keys, so Hydra reports it as it always does."""
    store = ConfigStore.instance()
    node = store.repo.get("model", {}).get(f"{choice}.yaml")
    if node is not None:
        return frozenset(node.node.keys())
    path = config_dir() / "model" / f"{choice}.yaml"
    if not path.is_file():
        return _default_swept_model_fields()
    config = OmegaConf.load(path)
    fields = {key for key in config if key != "defaults"}
    for entry in config.get("defaults", []):
        if isinstance(entry, str) and entry != "_self_":
            fields |= _model_fields(entry.removeprefix("/model/"))
    return frozenset(fields)
