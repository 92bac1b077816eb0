"""The three exception types every room raises.

`ConfigError` is for input that is wrong (unknown name, negative bandwidth, bad unit);
`InfeasibleError` is for a legal request that cannot be satisfied (the model does not fit
in memory, the group is larger than the fabric). Both name the offending value and the rule.
"""

from __future__ import annotations

import os
from typing import Any

DEBUG_VARIABLE = "DDLSIM_DEBUG"


def debug_enabled() -> bool:
    """``DDLSIM_DEBUG=1``: errors chain their causes and the command prints full tracebacks."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


class DdlsimError(Exception):
    """Base class of every error ddlsim raises on purpose.

    `cause` is the exception it was made from (a torch error under a capture, say), kept whether
    or not it is chained: ``raise error.keep_cause(cause) from debug_cause(cause)`` chains it
    (``__cause__``) only under ``DDLSIM_DEBUG=1``, so that an uncaught error prints ddlsim's line,
    not the library's traceback before it.
    """

    cause: BaseException | None = None

    def keep_cause(self, cause: BaseException | None) -> DdlsimError:
        self.cause = cause
        return self


def debug_cause(cause: BaseException | None) -> BaseException | None:
    """What to chain an error to: its cause under ``DDLSIM_DEBUG=1``, else nothing."""
    return cause if debug_enabled() else None


NO_VALUE: Any = type("NoValue", (), {"__repr__": lambda self: "NO_VALUE"})()


class ConfigError(DdlsimError, ValueError):
    """An invalid configuration value.

    `key` is the dotted config path (``fabric.bandwidth``), `value` what the user gave (or
    `NO_VALUE` when there is none to show, as for an unknown key), `rule` the rule it broke,
    phrased to follow "key = value: ".
    """

    def __init__(self, key: str, value: Any, rule: str) -> None:
        self.key = key
        self.value = value
        self.rule = rule
        shown = key if value is NO_VALUE else f"{key} = {value!r}"
        super().__init__(f"{shown}: {rule}")

    def under(self, prefix: str) -> ConfigError:
        """The same error with its key placed below `prefix` (``bandwidth`` -> ``fabric.bandwidth``)."""
        if not prefix:
            return self
        key = f"{prefix}.{self.key}" if self.key else prefix
        error = type(self)(key, self.value, self.rule)
        error.__cause__ = self.__cause__
        return error


class ProgramExitError(ConfigError):
    """The user's program (a capture's build or step function) exited instead of returning:
    ``sys.exit``, ``exit()``, or a `KeyboardInterrupt` it raised itself. A single run ends with its
    one line; a sweep records the job as ``failed: ...`` and ends with a non-zero status."""


class InfeasibleError(DdlsimError):
    """A legal request that cannot be satisfied; the message says what does not fit and why."""
