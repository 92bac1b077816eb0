"""Errors a Python caller can catch: Hydra's and OmegaConf's exceptions about overrides, as ddlsim's.

The command line prints one line for a bad override (`describe_error`). `ddlsim.run`,
`ddlsim.compose` and `ddlsim.Session` raise that same line as a `ConfigError` (`as_caller_error`),
with the library's exception as its ``__cause__``, so that ``except ddlsim.errors.ConfigError``
catches a typo key, an unknown option, a value of the wrong type and an override that does not
parse, as it catches a bad value.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from omegaconf.errors import OmegaConfBaseException

from ddlsim.core.errors import NO_VALUE, ConfigError, DdlsimError
from ddlsim.core.registry import omegaconf_error_to_config_error

# What Hydra raises when it cannot create or write the run or sweep directory (FileNotFoundError:
# a parent that cannot hold directories, such as /proc/1).
PATH_ERRORS = (PermissionError, NotADirectoryError, IsADirectoryError, FileExistsError, FileNotFoundError)


def _hydra_error(name: str) -> type[BaseException]:
    """Hydra's exception class `name`, or a class nothing raises where Hydra is not loaded (then no
    Hydra exception can occur: `ddlsim.run` of a mapping never loads it)."""
    module = sys.modules.get("hydra.errors")
    return getattr(module, name) if module is not None else _NotRaised


class _NotRaised(Exception):
    pass


class OverrideError(ConfigError):
    """A refused override: `line` is the one line the command prints for it (``ddlsim: error: <line>``)."""

    def __init__(self, key: str, line: str) -> None:
        super().__init__(key, NO_VALUE, line)
        self.args = (line,)


def describe_error(error: BaseException) -> str:
    """One line for a config or composition error: what was given, where, and the rule."""
    if isinstance(error, _hydra_error("MissingConfigException")) and error.missing_cfg_file:
        group, _, option = error.missing_cfg_file.rpartition("/")
        choices = ", ".join(sorted(error.options or []))
        if group:
            return f"{group}={option}: no such option in group '{group}'; choose one of {choices}"
        return str(error).splitlines()[0]
    cause = error.__cause__ if isinstance(error, _hydra_error("HydraException")) else error
    if isinstance(cause, OmegaConfBaseException):
        return str(omegaconf_error_to_config_error(cause, ""))
    if isinstance(cause, DdlsimError):
        return " ".join(str(cause).split())
    if isinstance(error, PATH_ERRORS):
        return (f"cannot write {error.filename or 'the output directory'}: {error.strerror or error}; "
                "set hydra.run.dir (hydra.sweep.dir for a sweep) to a writable directory")
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines[:3]) if lines else type(error).__name__


def as_caller_error(error: BaseException, key: str = "overrides") -> DdlsimError:
    """`error` as ddlsim's own: a `DdlsimError` it carries (unchanged), an OmegaConf error as the
    `ConfigError` naming its key, anything else as an `OverrideError` of `describe_error`'s line.
    The result's ``__cause__`` is `error` (set it with ``raise as_caller_error(e) from e``)."""
    if isinstance(error, DdlsimError):
        return error
    cause = error.__cause__ if isinstance(error, _hydra_error("HydraException")) else error
    if isinstance(cause, DdlsimError):
        return cause
    if isinstance(cause, OmegaConfBaseException):
        return omegaconf_error_to_config_error(cause, "")
    if isinstance(error, _hydra_error("MissingConfigException")) and error.missing_cfg_file:
        key = error.missing_cfg_file.rpartition("/")[0] or key
    return OverrideError(key, describe_error(error))


@contextlib.contextmanager
def caller_errors() -> Iterator[None]:
    """Raise Hydra's and OmegaConf's exceptions (and the ValueError Hydra raises for ``=3``) inside
    the block as `as_caller_error` gives them, chained to the original."""
    try:
        yield
    except DdlsimError:
        raise
    except (_hydra_error("HydraException"), OmegaConfBaseException, ValueError) as error:
        raise as_caller_error(error) from error


def override_list(overrides: Any, key: str = "overrides") -> list[str]:
    """The overrides as a list of strings; one string is one override (``"model.layers=2"``)."""
    if isinstance(overrides, str):
        return [overrides]
    if isinstance(overrides, Sequence) and all(isinstance(item, str) for item in overrides):
        return list(overrides)
    raise ConfigError(key, overrides, "must be a list of overrides such as ['fabric=ramp', 'model.target_loss=2.0']")
