"""compute's registries of model kinds (kernel lists, equivalent models): the workload room
registers into them, and `ddlsim.core.catalog` names the module of every kind, which compute
imports the first time the kind is asked for, so compute never imports workload."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from ddlsim.compute.equivalent_registry import EQUIVALENT_BUILDERS
from ddlsim.compute.kernel_registry import KERNEL_LISTERS
from ddlsim.compute.kinds import KindTable
from ddlsim.core.catalog import OPTIONS


def test_every_module_the_catalog_lists_for_kernel_lists_registers_exactly_its_kinds():
    for module in set(OPTIONS["kernels"].values()):
        importlib.import_module(module)
    assert KERNEL_LISTERS.registered() == sorted(OPTIONS["kernels"])


def test_every_module_the_catalog_lists_for_equivalent_models_registers_exactly_its_kinds():
    pytest.importorskip("torchrec")
    for module in set(OPTIONS["equivalent"].values()):
        importlib.import_module(module)
    assert EQUIVALENT_BUILDERS.registered() == sorted(OPTIONS["equivalent"])


def test_a_kind_is_loaded_from_its_module_the_first_time_it_is_asked_for():
    code = ("import sys\n"
            "from ddlsim.compute.kernel_registry import KERNEL_LISTERS, has_kernels, kernels_for\n"
            "from ddlsim.workload.shard_signatures import megatron_layer_signature\n"
            "from ddlsim.workload.transformer.layer import LayerShape\n"
            "assert 'ddlsim.workload.kernels.listers' not in sys.modules\n"
            "assert has_kernels('gpt_layer') and not has_kernels('dlrm_shard') and KERNEL_LISTERS.registered() == []\n"
            "assert kernels_for(megatron_layer_signature(LayerShape(64, 4, 16), 1, 2), 'forward')\n"
            "assert 'ddlsim.workload.kernels.listers' in sys.modules\n"
            "assert 'torch' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_a_catalog_module_that_does_not_register_its_kind_is_named():
    table: KindTable = KindTable("gadget", {"widget": "ddlsim.core.units"})
    assert "widget" in table and table.kinds() == ["widget"]
    with pytest.raises(TypeError, match="ddlsim.core.units is listed for the gadget of kind 'widget'"):
        table.get("widget")


def test_a_kind_is_registered_once():
    table: KindTable = KindTable("gadget", {})
    table.register("widget")(len)
    table.register("widget")(len)  # the same function again is harmless
    with pytest.raises(TypeError, match="kind 'widget' is registered twice"):
        table.register("widget")(abs)
    assert table.get("widget") is len and table.get("gizmo") is None
