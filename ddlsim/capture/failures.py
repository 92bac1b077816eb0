"""One-line errors for what a fake-tensor capture cannot do, naming the op or module and the fix."""

from __future__ import annotations

import contextlib
import logging
import os
import traceback
from collections.abc import Iterator
from typing import Any

from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    UnsupportedOperatorException,
)

from ddlsim.core.errors import ConfigError, DdlsimError, InfeasibleError, debug_enabled

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # ddlsim's own frames
NO_FAKE_TEXTS = ("no fake impl", "there was no fake impl or Meta kernel")
SCALAR_READS = {"aten._local_scalar_dense", "aten.item", "aten.is_nonzero", "aten.equal"}
# Loggers of torch that print a failing meta kernel's traceback before the exception reaches us.
TORCH_LOGGERS = ("torch._subclasses.fake_tensor", "torch._subclasses.fake_impls")


def _user_frames(frames: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """The frames of the user's program (not torch's or another library's, not ddlsim's)."""
    return [frame for frame in frames
            if "site-packages" not in frame.filename and not frame.filename.startswith(PACKAGE_DIR)]


def _located(module: str, frames: list[traceback.FrameSummary]) -> str:
    """`` in module M at file:line`` for the innermost of `frames`, each part when known."""
    line = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return (f" in module {module}" if module else "") + line


def _where(module: str) -> str:
    """Where an op raised, from the current stack (generated code such as ``<string>`` left out)."""
    stack = [frame for frame in _user_frames(traceback.extract_stack()) if not frame.filename.startswith("<")]
    return _located(module, stack)


@contextlib.contextmanager
def torch_tracebacks_quiet() -> Iterator[None]:
    """Keep torch from logging a failing meta kernel's traceback; ddlsim says it in one line
    (``DDLSIM_DEBUG=1`` keeps torch's logs and chains torch's exception as the cause)."""
    if debug_enabled():
        yield
        return
    loggers = [logging.getLogger(name) for name in TORCH_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def translate_op_error(error: BaseException, func: Any, module: str) -> DdlsimError | None:
    """The capture error for an exception an op raised under fake tensors, or None to re-raise it."""
    if isinstance(error, DdlsimError):
        return error
    name = f"{func.namespace}.{func._opname}"
    if isinstance(error, DataDependentOutputException) and name in SCALAR_READS:
        return InfeasibleError(
            f"op {name}{_where(module)} reads a Python value from a tensor (.item(), float(t), bool(t), "
            "`if t:`), which a fake-tensor capture does not have; compute it from shapes or configuration, "
            "or move it out of the training step")
    if isinstance(error, (DynamicOutputShapeException, DataDependentOutputException)):
        return InfeasibleError(
            f"op {name}{_where(module)} has a data-dependent output (its shape or value depends on tensor "
            "contents, which a fake-tensor capture does not have); use static shapes (for MoE routing, "
            "capacity-based dispatch), or split sizes from ddlsim.capture.splits()")
    if isinstance(error, UnsupportedOperatorException) or any(text in str(error) for text in NO_FAKE_TEXTS):
        return InfeasibleError(
            f"op {name}{_where(module)} has no fake-tensor (meta) implementation; register one with "
            "torch.library.register_fake, or replace the op")
    return None


def build_error(error: BaseException, module: str = "") -> DdlsimError:
    """A one-line error for an exception the user's build or step function raised (in `module`)."""
    if isinstance(error, DdlsimError):
        return error
    if "Couldn't swap" in str(error):
        return ConfigError("build", "module.to()", "converting the parameters of a module built under fake tensors "
                           "is not supported by torch; create them in the dtype you want (dtype= arguments, or "
                           "torch.set_default_dtype around the constructor)")
    where = _located(module, _user_frames(traceback.extract_tb(error.__traceback__)))
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return ConfigError("build", type(error).__name__,
                       f"the build or step function raised {type(error).__name__}: {message}{where}; "
                       "fix the program (it ran on a fake process group with fake tensors)")
