"""Light imports: which entry point may load what, checked in fresh processes (CONTRIBUTING.md, "Imports").

- `import ddlsim`, `import ddlsim.network`, a collective price, the complete registries and a
  training run from a plain mapping (the Python API without Hydra) load neither torch, torchrec,
  fbgemm_gpu nor Hydra;
- composing a config (`ddlsim.compose`, a list of overrides) and ``ddlsim --help`` load Hydra but
  not torch;
- the rooms that need torch (equivalent models, profiling) load it when used.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ddlsim

TORCH = ("torch", "torchrec", "fbgemm_gpu")
HYDRA = ("hydra",)
TABLES = ("pandas", "matplotlib")  # loaded where rows become tables and figures, not at start-up

DEFAULT_TRAINING_RUN = {"model": {"name": "megatron", "target_loss": 2.2}, "parallel": {},
                        "device": {"name": "a100_80gb"}, "compute": {}, "fabric": {"name": "ramp"},
                        "collective": {"name": "best"}, "task": {"name": "train"}, "training": {}}

PRICE = ("from ddlsim import estimate_collective\n"
         "r = estimate_collective(op='all_reduce', size_bytes=10**9, num_ranks=1024, fabric='superpod', "
         "algorithm='ring')\n"
         "assert r.time_s > 0 and r.num_steps > 0, r")


def loaded_after(code: str) -> set[str]:
    """The top-level packages in `sys.modules` after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


CASES = {
    "import ddlsim": ("import ddlsim", (*TORCH, *HYDRA, *TABLES, "numpy", "omegaconf")),
    "import ddlsim.network": ("import ddlsim.network", (*TORCH, *HYDRA, *TABLES, "networkx")),
    "a collective price": (PRICE, (*TORCH, *HYDRA, *TABLES)),
    "complete registries": ("from ddlsim.app.catalog import load_all\nload_all()\n"
                            "from ddlsim.core.registry import MODELS, TASKS\n"
                            "assert {'dlrm', 'topoopt', 'hf'} <= set(MODELS.names()) and 'profile' in TASKS",
                            (*TORCH, *HYDRA, *TABLES)),
    "a training run from a mapping": (f"import ddlsim\nresult = ddlsim.run({DEFAULT_TRAINING_RUN!r})\n"
                                      "assert result.rows[0]['iteration_time_s'] > 0",
                                      (*TORCH, *HYDRA, *TABLES)),
    "components of a DLRM run": (f"import ddlsim\nrun = dict({DEFAULT_TRAINING_RUN!r}, model={{'name': 'dlrm'}})\n"
                                 "components = ddlsim.build_components(run)\n"
                                 "workload = components.model.build_workload(components.parallel, 80 * 2**30)\n"
                                 "assert workload.plan['embedding_sharding'] == 'column_wise'",
                                 (*TORCH, *HYDRA)),
    "a composed config": ("import ddlsim\nconfig = ddlsim.compose(['experiment=single', 'fabric=superpod'])\n"
                          "assert config.fabric.name == 'superpod'", (*TORCH, *TABLES)),
    "ddlsim --help": ("import contextlib, io\nfrom ddlsim.app.cli import main\n"
                      "with contextlib.redirect_stdout(io.StringIO()) as out:\n    assert main(['--help']) == 0\n"
                      "assert 'fabric: ' in out.getvalue()", (*TORCH, *TABLES)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_entry_point_loads_only_what_it_needs(case):
    code, forbidden = CASES[case]
    loaded = loaded_after(code)
    assert not loaded & set(forbidden), f"{case} loaded {sorted(loaded & set(forbidden))}"


def test_hydra_is_loaded_by_composition_and_torch_by_equivalent_models():
    """The checks above would pass vacuously if the probe saw no modules at all."""
    assert "hydra" in loaded_after("import ddlsim\nddlsim.compose([])")
    code = ("from ddlsim import build_equivalent_shard\n"
            "from ddlsim.workload.shard_signatures import mlp_signature\n"
            "shard = build_equivalent_shard(mlp_signature(8, 16, 2, 1, 4), 'meta')\n"
            "assert sum(p.numel() for p in shard.module.parameters()) > 0")
    assert "torch" in loaded_after(code)


def test_torchrec_loaded_by_a_dlrm_shard_leaves_the_root_logger_alone():
    """Wherever torchrec is finally imported, it goes through `ddlsim.workload.torchrec_names`."""
    code = ("import logging\nfrom ddlsim import build_equivalent_shard\n"
            "from ddlsim.workload.dlrm_arch import DlrmShape, DlrmShard\n"
            "shard = DlrmShard(DlrmShape(2, 100, 16, 4, 8, 2, 2), 1, 100, 16, 2)\n"
            "build_equivalent_shard(shard.signature(4), 'meta')\n"
            "root = logging.getLogger()\n"
            "assert (len(root.handlers), root.level) == (0, logging.WARNING), root.handlers")
    assert "torchrec" in loaded_after(code)


def test_the_public_names_are_exported_lazily_and_resolve():
    names = {"ConfigError", "DdlsimError", "InfeasibleError", "build_components", "compose", "run", "run_point",
             "ParallelConfig", "architecture_params", "build_equivalent_shard", "gradient_bytes",
             "CollectiveEstimator", "ReductionModel", "estimate_collective", "make_fabric", "clear_caches"}
    assert names <= set(ddlsim.__all__) and names <= set(dir(ddlsim))
    for name in ddlsim.__all__:
        assert getattr(ddlsim, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        ddlsim.not_a_name  # noqa: B018
