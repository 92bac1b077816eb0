"""Ring all-reduce: reduce-scatter then all-gather around a logical ring."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.registry import ALGORITHMS


@dataclass
class RingConfig:
    name: str = "ring"


@ALGORITHMS.register("ring", RingConfig)
@dataclass(frozen=True)
class Ring:
    """Bandwidth-optimal ring: 2(n-1) steps of size/n bytes for an all-reduce."""

    name: str = "ring"

    @classmethod
    def from_config(cls, config: RingConfig) -> Ring:
        return cls()

    def all_reduce_steps(self, num_ranks: int, size_bytes: int) -> tuple[int, float]:
        """(number of steps, bytes each rank sends per step)."""
        return 2 * (num_ranks - 1), size_bytes / num_ranks
