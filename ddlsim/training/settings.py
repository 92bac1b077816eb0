"""How an iteration is scheduled: the overlap setting, DP bucket size and the schedule kind.

Overlap settings (the `training.overlap` key):

- ``none``: every collective blocks the computation that follows it, and the data-parallel
  gradient synchronisation starts after the last backward task. This is RAMP's strong-scaling
  assumption (section 8.1) and the default of the RAMP experiments: iteration time is simply
  compute time plus communication time.
- ``dp_backward``: the data-parallel gradient synchronisation is split into buckets of
  `bucket_size` bytes, as PyTorch DDP does. A bucket becomes ready when backward has produced
  its gradients and is then reduced on a separate communication stream while backward goes on.
  The optimizer step waits for the last bucket. Collectives inside the layers (tensor-parallel
  all-reduces, DLRM and expert-parallel all-to-alls) still block the computation that follows
  them, so an expert-parallel all-to-all runs beside the data-parallel buckets.
- ``fsdp_prefetch``: ``dp_backward``, and ZeRO-3 / FSDP parameter all-gathers run on their own
  stream one layer ahead of the compute that needs them (at most two in flight, as FSDP's
  ``limit_all_gathers``), while each layer's gradient reduce-scatter runs on another stream behind
  backward; the optimizer step waits for the last of them.
- ``tp_comm``: ``dp_backward``, and every tensor-parallel collective of a layer runs beside that
  layer's compute (Megatron-Core's ``tp_comm_overlap``, which splits the GEMMs and the ring
  exchanges into chunks); the layer after waits for both.
- ``all``: every overlap above.

With ``network.contention=on`` (the default) collectives that these overlaps put in flight at
the same time share the fabric (`ddlsim.training.contended`, docs/contention.md).

`overlap_p2p_comm` (Megatron-Core's `ModelParallelConfig.overlap_p2p_comm`, default False there
and here) only concerns the interleaved pipeline schedule, as in Megatron: False issues every
stage-to-stage exchange as one blocking batch of sends and receives after each chunk step pair;
True posts the steady-state sends and receives asynchronously
(`ddlsim.training.schedules.exchanges`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ddlsim.core import units
from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import omegaconf_error_to_config_error
from ddlsim.training.at_scale.settings import AtScaleConfig, AtScaleSettings
from ddlsim.training.failures import FailuresConfig, FailureSettings

ENGINES = ("auto", "events")


class Overlap(StrEnum):
    NONE = "none"
    DP_BACKWARD = "dp_backward"
    FSDP_PREFETCH = "fsdp_prefetch"
    TP_COMM = "tp_comm"
    ALL = "all"

    @property
    def buckets(self) -> bool:
        """The data-parallel gradient synchronisation runs in buckets during backward."""
        return self is not Overlap.NONE

    @property
    def fsdp_prefetch(self) -> bool:
        """ZeRO-3 gathers run ahead on their own stream, gradient reduce-scatters behind backward."""
        return self in (Overlap.FSDP_PREFETCH, Overlap.ALL)

    @property
    def tp_comm(self) -> bool:
        """Tensor-parallel collectives overlap the layer compute they feed or drain."""
        return self in (Overlap.TP_COMM, Overlap.ALL)


@dataclass
class TrainingConfig:
    """The `training` config group: how compute and communication are laid out in time.

    `engine`: ``auto`` sums a pipelined iteration up in closed form where that is exact
    (`ddlsim.training.analytic`) and lays every op out otherwise; ``events`` always lays every op
    out (the same numbers within floating rounding, slower).
    """

    overlap: str = "none"
    bucket_size: str = "25MiB"
    schedule: str = "auto"
    trace: bool = False  # write the iteration timeline as trace.json into the run's output directory
    chakra: bool = False  # write the run (captured or analytic) as Chakra ETs into <output>/chakra/ (docs/chakra.md)
    engine: str = "auto"
    overlap_p2p_comm: bool = False  # interleaved schedule: asynchronous stage-to-stage sends (Megatron-Core's option)
    at_scale: AtScaleConfig = field(default_factory=AtScaleConfig)  # ddlsim.training.at_scale
    failures: FailuresConfig = field(default_factory=FailuresConfig)  # ddlsim.training.failures


@dataclass(frozen=True)
class TrainingSettings:
    """`TrainingConfig` parsed into internal units.

    `schedule` names the iteration schedule (``sequential`` for one pipeline stage, ``1f1b``,
    ``interleaved_1f1b``: the table of `ddlsim.training.schedules.dispatch`); ``auto`` picks
    ``sequential`` unless the workload plan asks for pipeline stages. `trace`: the train task
    writes the iteration timeline as ``trace.json`` (`ddlsim.training.trace`). `overlap_p2p_comm`:
    see the module docstring.
    """

    overlap: Overlap = Overlap.NONE
    bucket_size_bytes: int = 25 * units.MEBI
    schedule: str = "auto"
    trace: bool = False
    engine: str = "auto"
    overlap_p2p_comm: bool = False
    chakra: bool = False
    contention: bool = True  # the root `network.contention` key: concurrent collectives share the fabric
    at_scale: AtScaleSettings = AtScaleSettings()
    failures: FailureSettings = FailureSettings()

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "overlap", Overlap(self.overlap))
        except ValueError:
            choices = ", ".join(overlap.value for overlap in Overlap)
            raise ConfigError("overlap", self.overlap, f"must be one of {choices}") from None
        if not isinstance(self.bucket_size_bytes, int) or self.bucket_size_bytes < 1:
            raise ConfigError("bucket_size", self.bucket_size_bytes, "must be at least 1 byte")
        if not self.schedule:
            raise ConfigError("schedule", self.schedule, "must name a schedule or be 'auto'")
        if self.engine not in ENGINES:
            raise ConfigError("engine", self.engine, f"must be one of {', '.join(ENGINES)}")
        if not isinstance(self.overlap_p2p_comm, bool):
            raise ConfigError("overlap_p2p_comm", self.overlap_p2p_comm, "must be true or false")
        if not isinstance(self.contention, bool):
            raise ConfigError("contention", self.contention, "must be true or false")

    @classmethod
    def from_config(cls, config: TrainingConfig) -> TrainingSettings:
        try:
            at_scale = AtScaleSettings.from_config(config.at_scale)
        except ConfigError as error:
            raise error.under("at_scale") from None
        try:
            failures = FailureSettings.from_config(config.failures)
        except ConfigError as error:
            raise error.under("failures") from None
        return cls(overlap=config.overlap,
                   bucket_size_bytes=units.parse_size_bytes(config.bucket_size, "bucket_size", allow_zero=False),
                   schedule=config.schedule, trace=bool(config.trace), engine=config.engine,
                   overlap_p2p_comm=config.overlap_p2p_comm, chakra=bool(config.chakra), at_scale=at_scale,
                   failures=failures)


def training_settings(node: Any) -> TrainingSettings:
    """Parse the `training` config section (a mapping or config node); errors name ``training.<key>``.

    Settings are kept by the section's content (they depend on it alone), so the sweep's jobs and a
    `ddlsim.Session`'s runs parse each distinct section once."""
    try:
        key = json.dumps(OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node,
                         sort_keys=True)
    except (TypeError, ValueError, OmegaConfBaseException):  # not plain data: parsed (and refused), never kept
        return _parse_training(node)
    return PROCESS_CACHES.memo("training settings", maxsize=64).get_or_make(key, lambda: _parse_training(node))


def _parse_training(node: Any) -> TrainingSettings:
    try:
        merged = OmegaConf.merge(OmegaConf.structured(TrainingConfig), node if node is not None else {})
        return TrainingSettings.from_config(OmegaConf.to_object(merged))
    except OmegaConfBaseException as error:
        raise omegaconf_error_to_config_error(error, "training") from None
    except ConfigError as error:
        raise error.under("training") from None


CONTENTION_CHOICES = {"on": True, "true": True, "off": False, "false": False}


def contention_setting(value: Any) -> bool:
    """The root `network.contention` key (``on`` or ``off``; true/false too) as a bool."""
    text = str(value).strip().lower() if value is not None else "on"
    if text not in CONTENTION_CHOICES:
        raise ConfigError("network.contention", value, "must be on or off")
    return CONTENTION_CHOICES[text]


def run_settings(config: Any) -> TrainingSettings:
    """The `training` section with the root `network.contention` key folded in; `config` is a DictConfig
    or the same config as plain resolved containers."""
    settings = training_settings(config.get("training"))
    if OmegaConf.is_config(config):
        contention = contention_setting(OmegaConf.select(config, "network.contention", default="on"))
    else:  # the same config as plain containers
        contention = contention_setting((config.get("network") or {}).get("contention", "on"))
    return settings if settings.contention == contention else dataclasses.replace(settings, contention=contention)
