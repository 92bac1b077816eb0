"""`ddlsim.run(config)`: the whole run as a library call, with or without Hydra.

`compose()` builds the same config the command line would; `build_components()` validates
every group and builds its object (cheap: constructors only parse and check); `run()` hands
the components to the chosen task and raises `ConfigError` or `InfeasibleError` for a point
that cannot run. `run_point()` is one point of a sweep: such a point becomes a row whose
``status`` says why (``infeasible: ...``, ``invalid: ...``, or ``failed: ...`` for a captured
program that exited), so that the sweep goes on.

A sweep from Python is a loop over `ddlsim.Session` (`ddlsim.app.session`: it composes once per set
of group choices and reuses unchanged groups' objects, milliseconds per configuration instead of
the ~0.1 s of a composition); `ddlsim.app.sweep.inprocess.run_sweep` runs a ``-m`` sweep, with the
same expansion of ``a=1,2`` as ``ddlsim -m``::

    session = ddlsim.Session(["experiment=single", "fabric=ramp"])
    rows = []
    for loss in (2.2, 2.0):
        rows += session.run_point([f"model.target_loss={loss}"]).rows
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ddlsim.app.assumptions import FAITHFUL, apply_assumptions, assumptions_name, check_assumption_effect
from ddlsim.app.caller_errors import caller_errors, override_list
from ddlsim.app.catalog import load_all
from ddlsim.app.config_store import GROUPS, RootConfig, config_dir, default_options, register_configs
from ddlsim.app.group_objects import GroupObjects
from ddlsim.compute.model import ComputeConfig
from ddlsim.compute.options import build_compute
from ddlsim.core.errors import ConfigError, DdlsimError, InfeasibleError, ProgramExitError
from ddlsim.core.registry import TASKS, build, omegaconf_error_to_config_error, unknown_key_error
from ddlsim.core.seeds import check_seed
from ddlsim.report.settings import ReportSettings
from ddlsim.tasks.base import Components, Row, TaskResult, config_label, task_reads
from ddlsim.training.settings import TrainingConfig, contention_setting, training_settings
from ddlsim.workload.parallel import ParallelConfig

# Config sections typed by a schema outside the registries. Their mapping fields (``compute.classes``,
# ``task.collectives``) and Hydra's own ``hydra`` node are the only places a ``+key`` may add a key.
_SECTIONS = (("parallel", ParallelConfig), ("compute", ComputeConfig), ("training", TrainingConfig))


def compose(overrides: Sequence[str] | str = (), config_name: str = "config") -> DictConfig:
    """The config `ddlsim <overrides>` would run, composed without starting a Hydra app (one string
    is one override). A bad override raises the `ConfigError` whose message is the line the
    command prints for it, chained to Hydra's exception (`ddlsim.app.caller_errors`)."""
    from hydra import compose as hydra_compose  # Hydra loads only where a config is composed
    from hydra import initialize_config_dir

    given = override_list(overrides)
    register_configs()
    with caller_errors(), initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="ddlsim"):
        return hydra_compose(config_name=config_name, overrides=given)


def _as_root(config: DictConfig | Mapping[str, Any] | Sequence[str] | None) -> DictConfig:
    if config is None:
        return compose()
    if isinstance(config, (list, tuple, str)):  # overrides; one string is one override
        return compose(config)
    if isinstance(config, DictConfig):
        return config
    if isinstance(config, Mapping):
        load_all()
        try:
            return OmegaConf.merge(OmegaConf.structured(RootConfig), dict(config))
        except OmegaConfBaseException as error:
            raise omegaconf_error_to_config_error(error, "") from None
    raise ConfigError("config", type(config).__name__, "must be a DictConfig, a mapping or a list of overrides")


def section(node: Any, schema: type, key: str) -> Any:
    """The `schema` instance of the config section `node` (its checks run), errors placed under `key`."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), node)
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as error:
        raise omegaconf_error_to_config_error(error, key) from None
    except ConfigError as error:
        raise error.under(key) from None


def check_known_keys(root: DictConfig) -> None:
    """Raise `ConfigError` for a key no schema defines (``+fabric.nic_bandwith=...`` included)."""
    error = unknown_key_error(root, RootConfig, "", extra=("hydra",))
    for section, schema in _SECTIONS:
        error = error or unknown_key_error(root.get(section), schema, section)
    if error is not None:
        raise error


def check_unread_groups(root: DictConfig, task: Any) -> None:
    """Raise `ConfigError` for a group `task` does not read whose option is not a default one
    (``fabric=superpod`` with ``task=packet``): the choice would be ignored silently. The default
    experiment's own choices count as defaults (`default_options`), so that ``ddlsim task=profile``
    still runs.

    Only the option is compared, not the keys of the schema sections (``parallel``, ``compute``,
    ``training``), which have no option name: an experiment may set them for its default task and
    still be searched (``experiment=vtrain_a100 task=search``).
    """
    name = OmegaConf.select(root, "task.name", default="")
    defaults = default_options()
    reads = task_reads(task)
    for group in GROUPS:
        if group == "task" or group in reads or group in dict(_SECTIONS):
            continue
        chosen = config_label(root, group)
        if chosen not in defaults[group]:
            raise ConfigError(group, chosen, f"has no effect: task {name} does not read the {group} group (it "
                                             f"reads {', '.join(reads) or 'only its own keys'}); leave {group} at "
                                             f"its default, {defaults[group][0]} (as experiment=single does)")


def build_components(config: DictConfig | Mapping[str, Any] | Sequence[str] | None = None, *,
                     output_dir: str | os.PathLike[str] | None = None,
                     check_assumptions: bool = True, objects: GroupObjects | None = None) -> Components:
    """Validate every config group and build its object; raises `ConfigError` naming the key.

    `output_dir` is the run's directory, for tasks that write files of their own (profiles).
    `check_assumptions` false skips the check that the assumption set changes something the task
    reads (a sweep's shared config, whose swept keys are only at their defaults). `objects` (a
    sweep's) gives back the objects of groups whose config it has built before.
    """
    given = _as_root(config)
    reusable = objects is not None and assumptions_name(given) == FAITHFUL
    reuse = objects.builder(given) if reusable else (lambda group, make: make())
    return assemble_components(given, reuse, output_dir=output_dir, check_assumptions=check_assumptions)


def assemble_components(given: DictConfig, reuse: Callable[[str, Callable[[], Any]], Any], *,
                        output_dir: str | os.PathLike[str] | None = None,
                        check_assumptions: bool = True, check_keys: bool = True,
                        structure_checked: bool = False, plain: dict[str, Any] | None = None) -> Components:
    """`build_components` of a composed config, each group's object made by ``reuse(group, make)``:
    `make()` validates and builds it (`ddlsim.core.registry.build`); `ddlsim.Session` and a sweep's
    `GroupObjects` return the object built before when the group's config has not changed.
    `check_keys` false skips `check_known_keys` (a config that only changes values of one that
    passed it). `structure_checked` true skips every check that reads only the group choices, option
    names and labels and the assumption set (none missing, known keys, groups the task reads, the
    assumption set's effect) and the assumption overlays: `ddlsim.Session` passes it for a config
    that changes only scalar values of one that passed them under ``faithful``, where no overlay applies.
    `plain`: `given` as plain resolved containers, where the caller keeps one (`Components.plain`)."""
    if not structure_checked:
        for group in GROUPS:
            if OmegaConf.is_missing(given, group):
                raise ConfigError(group, "???", "is required; choose an option of this group")
    if check_keys and not structure_checked:
        check_known_keys(given)
    seed = plain.get("seed") if plain is not None else None  # `plain` is `given` resolved: its seed, read once
    check_seed(seed if isinstance(seed, int) else OmegaConf.select(given, "seed", default=0), "seed")
    root = given if structure_checked else apply_assumptions(given)
    device = reuse("device", lambda: build("device", root.device))
    reuse("training", lambda: training_settings(root.training))  # validated here; the task reads `config`
    reuse("network", lambda: contention_setting(OmegaConf.select(root, "network.contention", default="on")))
    # validated here; a sweep's report reads it
    reuse("report", lambda: section(root.get("report") or {}, ReportSettings, "report"))
    components = Components(
        config=root,
        model=reuse("model", lambda: build("model", root.model)),
        parallel=reuse("parallel", lambda: section(root.parallel, ParallelConfig, "parallel")),
        device=device,
        fabric=reuse("fabric", lambda: build("fabric", root.fabric)),
        algorithm=reuse("collective", lambda: build("collective", root.collective)),
        task=reuse("task", lambda: build("task", root.task)),
        compute=reuse("compute", lambda: build_compute(root.compute, device)),
        output_dir=Path(output_dir) if output_dir is not None else None,
        plain=plain,
    )
    reads = task_reads(components.task)
    if {"model", "device"} <= set(reads) and getattr(components.model, "precision", None) is not None:
        device.check_precision(components.model.precision, "model.precision")
    if structure_checked:
        return components
    check_unread_groups(given, components.task)
    if check_assumptions:
        check_assumption_effect(given, task_reads(components.task), str(given.task.name))
    return components


def run(config: DictConfig | Mapping[str, Any] | Sequence[str] | None = None, *,
        output_dir: str | os.PathLike[str] | None = None, objects: GroupObjects | None = None) -> TaskResult:
    """Run one configuration and return its rows and summary.

    `config` may be a composed config, a plain mapping of groups, a list of command-line
    overrides (``["fabric=ideal", "task.sizes=[1GB]"]``; one string is one override) or None for
    the default. Raises `ConfigError` for invalid input (a bad override with the line the command
    prints for it, chained to Hydra's exception) and `InfeasibleError` for a point that cannot run. Writes no
    files, except a task's own into `output_dir` (``task=profile``).
    """
    return run_components(build_components(config, output_dir=output_dir, objects=objects))


def run_components(components: Components) -> TaskResult:
    """Hand built components to their task; rows name a non-default assumption set."""
    result = components.task.run(components)
    name = assumptions_name(components.view)
    if name != FAITHFUL:
        for row in result.rows:
            row["assumptions"] = name
    return result


def run_point(config: DictConfig | Mapping[str, Any] | Sequence[str] | None = None, *,
              output_dir: str | os.PathLike[str] | None = None, objects: GroupObjects | None = None) -> TaskResult:
    """`run`, as one point of a sweep: a point that cannot run is a row with its reason.

    `objects`: the sweep's `GroupObjects`, reused from point to point (see `ddlsim.app.group_objects`).

    The row holds the point's labels (`point_labels`) and ``status`` = ``infeasible: <reason>``
    or ``invalid: <key = value: rule>``. With ``task.on_infeasible=error`` the error is raised.
    """
    root = _as_root(config)
    try:
        return run(root, output_dir=output_dir, objects=objects)
    except (ConfigError, InfeasibleError) as error:
        return failed_point(root, error)


def failed_point(root: DictConfig, error: ConfigError | InfeasibleError) -> TaskResult:
    """The row of a point that could not run (its labels and ``status``); `error` itself under
    ``task.on_infeasible=error``."""
    if OmegaConf.select(root, "task.on_infeasible", default="row") == "error":
        raise error
    row = {**point_labels(root), "status": error_status(error)}
    if assumptions_name(root) != FAITHFUL:
        row["assumptions"] = assumptions_name(root)
    described = ", ".join(f"{key} {value}" for key, value in row.items() if key != "status")
    return TaskResult(rows=[row], summary=f"{described}: {row['status']}")


def error_status(error: DdlsimError) -> str:
    """``infeasible: <reason>``, ``invalid: <key = value: rule>`` or, for a captured program that
    exited instead of returning (`ProgramExitError`), ``failed: <key = value: rule>``, on one line."""
    kind = ("infeasible" if isinstance(error, InfeasibleError) else
            "failed" if isinstance(error, ProgramExitError) else "invalid")
    return f"{kind}: {' '.join(str(error).split())}"


def point_labels(config: DictConfig) -> Row:
    """The label columns of a point's row, from its config alone (the task's own `labels` if it has them)."""
    name = OmegaConf.select(config, "task.name", default=None)
    labels = getattr(TASKS.entry(name).factory, "labels", None) if name in TASKS else None
    if labels is not None:
        try:
            return labels(config)
        except (DdlsimError, OmegaConfBaseException, AttributeError, KeyError):
            pass  # a config too broken for the task's labels still gets the generic ones
    return {"fabric": config_label(config, "fabric"),
            "algorithm": str(OmegaConf.select(config, "collective.name", default=""))}
