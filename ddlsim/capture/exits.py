"""A user's program that stops instead of returning or raising an error, and one that fails to import.

A build or step function that calls ``sys.exit`` (or ``exit()``, ``quit()``), or raises a
`KeyboardInterrupt` or another `BaseException` that is not an `Exception` itself, would otherwise end
the whole command, with exit status 0 and no result when the code is 0. `program_exits` turns that
into a `ProgramExitError` naming the function and the line. A real Ctrl-C is told apart by a SIGINT
handler installed around the call (main thread only): it still interrupts, as the user asked.

`import_failure` is the one-line error for an entry file or module whose import raises (a syntax
error, a `NameError` at module level, ...), naming the file and line.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import traceback
from collections.abc import Iterator
from typing import Any

from ddlsim.capture.failures import _located, _user_frames
from ddlsim.core.errors import ConfigError, ProgramExitError

ENTRY_MODULE_PREFIX = "ddlsim_entry_"  # the module names of entry files (`ddlsim.capture.api`)


def describe_function(function: Any) -> str:
    """``module:qualname`` of a function (of the wrapped one for a `functools.partial`)."""
    inner = getattr(function, "func", function)
    module = str(getattr(inner, "__module__", "?"))
    if module.startswith(ENTRY_MODULE_PREFIX):  # an entry loaded from a file: name the file
        module = getattr(getattr(inner, "__code__", None), "co_filename", module)
    return f"{module}:{getattr(inner, '__qualname__', type(inner).__name__)}"


class _SigintSeen:
    """Whether a SIGINT arrived while the user's function ran (a real Ctrl-C, not a raise)."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, signum: int, frame: Any) -> None:
        self.seen = True
        signal.default_int_handler(signum, frame)


@contextlib.contextmanager
def _watch_sigint() -> Iterator[_SigintSeen]:
    watch = _SigintSeen()
    installed = (threading.current_thread() is threading.main_thread()
                 and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if installed:
        signal.signal(signal.SIGINT, watch)
    try:
        yield watch
    finally:
        if installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _how(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r})"
    return f"raised {type(error).__name__}"


@contextlib.contextmanager
def program_exits(key: str, function: Any) -> Iterator[None]:
    """Run the user's `function` (its call inside the block); an exit becomes a `ProgramExitError`
    under `key` (``build`` or ``step``). Exceptions and a real Ctrl-C pass through unchanged."""
    with _watch_sigint() as watch:
        try:
            yield
        except Exception:
            raise
        except GeneratorExit:
            raise
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt) and watch.seen:
                raise
            where = _located("", _user_frames(traceback.extract_tb(error.__traceback__)))
            raise ProgramExitError(key, describe_function(function),
                                   f"{_how(error)}{where} instead of returning; a {key} function must return "
                                   "(raise an exception to report a failure)") from None


def import_failure(entry: str, what: str, error: BaseException) -> ConfigError:
    """The one-line error of an entry whose import (of file or module `what`) raised `error`."""
    if isinstance(error, SyntaxError) and error.filename:
        where = f" at {error.filename}:{error.lineno}"
        message = error.msg
    else:
        frames = [frame for frame in _user_frames(traceback.extract_tb(error.__traceback__))
                  if not frame.filename.startswith("<")]
        where = _located("", frames)
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        if isinstance(error, SystemExit):
            message = f"sys.exit({error.code!r}) at import"
    return ConfigError("entry", entry, f"cannot import {what}: {type(error).__name__}: {message}{where}")
