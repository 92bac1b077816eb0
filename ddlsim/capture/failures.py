"""One-line errors for what a fake-tensor capture cannot do, naming the op or module and the fix."""

from __future__ import annotations

import os
import traceback
from typing import Any

from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    UnsupportedOperatorException,
)

from ddlsim.errors import ConfigError, DdlsimError, InfeasibleError

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # ddlsim's own frames
NO_FAKE_TEXTS = ("no fake impl", "there was no fake impl or Meta kernel")


def _where(module: str) -> str:
    return f" in module {module}" if module else ""


def translate_op_error(error: BaseException, func: Any, module: str) -> DdlsimError | None:
    """The capture error for an exception an op raised under fake tensors, or None to re-raise it."""
    if isinstance(error, DdlsimError):
        return error
    name = f"{func.namespace}.{func._opname}"
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


def build_error(error: BaseException) -> DdlsimError:
    """A one-line error for an exception the user's build or step function raised."""
    if isinstance(error, DdlsimError):
        return error
    if "Couldn't swap" in str(error):
        return ConfigError("build", "module.to()", "converting the parameters of a module built under fake tensors "
                           "is not supported by torch; create them in the dtype you want (dtype= arguments, or "
                           "torch.set_default_dtype around the constructor)")
    frames = traceback.extract_tb(error.__traceback__)
    user = [frame for frame in frames if "site-packages" not in frame.filename
            and not frame.filename.startswith(PACKAGE_DIR)]
    where = f" at {user[-1].filename}:{user[-1].lineno}" if user else ""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return ConfigError("build", type(error).__name__,
                       f"the build or step function raised {type(error).__name__}: {message}{where}; "
                       "fix the program (it ran on a fake process group with fake tensors)")
