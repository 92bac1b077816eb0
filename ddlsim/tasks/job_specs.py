"""The jobs of a shared-cluster task, from its config: a list of jobs or a mix with shares.

    jobs:                                    mix: {topoopt_dlrm: 0.4, topoopt_bert: 0.3, ...}
      - {model: topoopt_dlrm, count: 2}      num_jobs: 10
      - {model: {name: megatron, ...},       job_model: {num_servers: 16}   (every mix job's model)
         parallel: {tensor: 8}, nodes: [..]}

A job's ``model`` is an option of the model group (its YAML under ``configs/model/`` or a
registered model name) or a whole model mapping, with ``model_overrides`` on top; ``parallel``
the job's own parallel degrees (the parallel group's keys). A mix gives each model
``round(share x num_jobs)`` jobs by the largest remainder (Hamilton's method, ties to the
earlier model), in the order the mix lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import LABEL_KEY, build, omegaconf_error_to_config_error, option_settings
from ddlsim.workload.parallel import ParallelConfig


@dataclass(frozen=True)
class JobSpec:
    """One job: what rows call its model, the model's config, its parallel degrees, its nodes."""

    label: str
    model: dict
    parallel: dict
    nodes: tuple[int, ...] | None = None


def plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def model_option(name: str, key: str) -> dict:
    """The model group's option `name` as a plain mapping (`ddlsim.core.registry.option_settings`:
    a registered name, or a YAML variant with its defaults chain resolved), labelled with its name."""
    settings = option_settings("model", name, key=key)
    settings.setdefault(LABEL_KEY, name)
    return settings


def _model_config(given: Any, overrides: Mapping, key: str) -> tuple[str, dict]:
    if isinstance(given, str):
        config = model_option(given, key)
    elif isinstance(given, Mapping):
        config = dict(given)
    else:
        raise ConfigError(key, given, "must name a model option or give a model mapping")
    config = {**config, **dict(overrides)}
    label = str(config.get(LABEL_KEY) or config.get("name") or "")
    return label, config


def parse_jobs(jobs: Any, mix: Any, num_jobs: int, model_overrides: Any, prefix: str = "") -> list[JobSpec]:
    """The task's jobs, in order (module docstring); errors name ``<prefix>.jobs[i]...`` or ``<prefix>.mix``
    (``jobs[i]`` without a prefix: the task registry places its errors under ``task``)."""
    jobs, mix, overrides = plain(jobs) or [], plain(mix) or {}, plain(model_overrides) or {}
    prefix = f"{prefix}." if prefix else ""
    if jobs and mix:
        raise ConfigError(f"{prefix}jobs", jobs, "give either a list of jobs or a mix (with num_jobs), not both")
    if not jobs and not mix:
        return []  # the task's own default (task=jobs: num_jobs copies of the model group's model)
    if mix:
        return _mix_jobs(mix, num_jobs, overrides, prefix)
    specs = []
    for index, item in enumerate(jobs):
        key = f"{prefix}jobs[{index}]"
        item = {"model": item} if isinstance(item, str) else dict(item)
        unknown = set(item) - {"model", "count", "parallel", "nodes"}
        if unknown:
            raise ConfigError(f"{key}.{sorted(unknown)[0]}", item[sorted(unknown)[0]],
                              "unknown job key; a job has model, count, parallel and nodes")
        count = item.get("count", 1)
        if not isinstance(count, int) or count < 1:
            raise ConfigError(f"{key}.count", count, "must be an integer >= 1")
        nodes = item.get("nodes")
        if nodes is not None and count != 1:
            raise ConfigError(f"{key}.nodes", nodes, "names one job's nodes: use count 1")
        label, config = _model_config(item.get("model"), overrides, f"{key}.model")
        parallel = dict(item.get("parallel") or {})
        specs += [JobSpec(label, config, parallel, tuple(nodes) if nodes is not None else None)] * count
    return specs


def _mix_jobs(mix: Mapping, num_jobs: int, overrides: Mapping, prefix: str) -> list[JobSpec]:
    if num_jobs < 1:
        raise ConfigError(f"{prefix}num_jobs", num_jobs, "must be >= 1 with a mix")
    shares = {str(name): float(share) for name, share in mix.items()}
    if any(share < 0 for share in shares.values()) or not sum(shares.values()) > 0:
        raise ConfigError(f"{prefix}mix", shares, "shares must be >= 0 and add up to more than 0")
    total = sum(shares.values())
    exact = {name: num_jobs * share / total for name, share in shares.items()}
    counts = {name: int(value) for name, value in exact.items()}
    order = sorted(exact, key=lambda name: -(exact[name] - counts[name]))  # stable: ties to the earlier
    for name in order[:num_jobs - sum(counts.values())]:
        counts[name] += 1
    specs = []
    for name, count in counts.items():
        label, config = _model_config(name, overrides, f"{prefix}mix.{name}")
        specs += [JobSpec(label, config, {})] * count
    return specs


def build_job_model(spec: JobSpec, key: str) -> tuple[Any, ParallelConfig]:
    """The job's model object and parallel config; errors name `key`."""
    model = build("model", spec.model, key=f"{key}.model")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ParallelConfig), spec.parallel)
        parallel = OmegaConf.to_object(merged)
    except OmegaConfBaseException as error:
        raise omegaconf_error_to_config_error(error, f"{key}.parallel") from None
    except ConfigError as error:
        raise error.under(f"{key}.parallel") from None
    return model, parallel
