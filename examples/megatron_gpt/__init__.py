"""ddlsim's own GPT (`model=gpt`) written as a Megatron-style PyTorch program (see program.py)."""

from .program import build, make_build, padded_vocab

__all__ = ["build", "make_build", "padded_vocab"]
