"""Fuzz of the Python door (issue 35): 100 random override lists, drawn from a fixed seed, through
`ddlsim.run`; every outcome is a result or a `DdlsimError`, never another exception type. About
10 s of CPU (`ddlsim.run` composes each set of group choices once in the process)."""

from __future__ import annotations

import random

import ddlsim
from ddlsim.core.errors import DdlsimError
from ddlsim.tasks.base import TaskResult

SEED = 35
LISTS = 100
VALUES = {
    "model.target_loss": ["2.5", "2.2", "abc", "-1", "[1,2]", "0", "1e9", "null", "'2.4'"],
    "model.precision": ["fp16", "bf16", "fp8", "int3"],
    "fabric": ["ideal", "superpod", "ramp", "torus2d", "nosuch"],
    "fabric.bandwidth": ["400Gbps", "fast", "0", "-5Gbps", "1e30Gbps", "400"],
    "collective": ["ring", "best", "rampx", "nosuch"],
    "device": ["a100_80gb", "h100_sxm", "nosuch"],
    "parallel.tensor": ["1", "8", "3", "abc", "-2", "100000"],
    "parallel.pipeline": ["1", "2", "7", "0"],
    "seed": ["0", "x", "-1"],
    "task": ["train", "collective", "nosuch"],
    "task.sizes": ["[1MB]", "[abc]", "1GB", "[]"],
    "training.overlap": ["dp_backward", "nope", "none"],
    "network.contention": ["on", "off", "maybe"],
    "fabrik.bandwidth": ["400Gbps"],
    "model.target_los": ["2.5"],
    "paralel.tensor": ["8"],
}
ODD = ["+fabric.foo=3", "~model", "fabric", "=3", "model.target_loss=2.0,2.1", "hydra.foo=1", "+nosuch=1",
       "model=nosuch", "experiment=nosuch", "fabric.bandwidth=", "model.target_loss=[", "task.sizes=[1GB,"]


def random_overrides(rng: random.Random) -> list[str]:
    overrides = ["experiment=single"]
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.15:
            overrides.append(rng.choice(ODD))
        else:
            key = rng.choice(sorted(VALUES))
            overrides.append(f"{key}={rng.choice(VALUES[key])}")
    return overrides


def override_lists() -> list[list[str]]:
    rng = random.Random(SEED)
    return [random_overrides(rng) for _ in range(LISTS)]


def test_the_lists_are_deterministic():
    assert override_lists() == override_lists()


def test_every_random_override_list_gives_a_result_or_a_ddlsim_error():
    outcomes = {"result": 0, "error": 0}
    for overrides in override_lists():
        try:
            result = ddlsim.run(overrides)
        except DdlsimError as error:
            assert "\n" not in str(error), (overrides, str(error))
            outcomes["error"] += 1
        else:
            assert isinstance(result, TaskResult), overrides
            outcomes["result"] += 1
    assert outcomes["result"] > 0 and outcomes["error"] > 0, outcomes  # both kinds of outcome were exercised
