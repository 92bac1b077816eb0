"""Fabric capabilities are methods of the fabric base with defaults (`ddlsim.network.fabrics.base`):
every registered fabric and variant answers each of them, and no caller looks one up by name."""

from __future__ import annotations

import math
import re
from dataclasses import fields
from pathlib import Path

import pytest

import ddlsim
from ddlsim.app.catalog import load_all
from ddlsim.core.catalog import OPTIONS
from ddlsim.core.options import variant_names
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout, NetworkCost
from ddlsim.network import make_fabric
from ddlsim.training.energy import NO_MODEL_SCOPE, network_energy

load_all()
VARIANTS = variant_names("fabric")
PACKAGE = Path(ddlsim.__file__).parent
CAPABILITY_NAMES = ("network_cost", "dims", "radix", "ring_plan", "nic_bandwidth_bps", "tier_sizes", "levels")
LOOKUP = re.compile(r"\b(?:getattr|hasattr)\([^,()]+,\s*[\"'](" + "|".join(CAPABILITY_NAMES) + r")[\"']")


def test_no_capability_is_looked_up_by_name() -> None:
    found = [f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if LOOKUP.search(line)]
    assert not found, "ask the fabric's capability method instead:\n" + "\n".join(found)


def test_the_grep_pattern_catches_a_lookup() -> None:
    assert LOOKUP.search('radix = getattr(fabric, "radix", None)')
    assert LOOKUP.search("if hasattr(request.fabric, 'ring_plan'):")
    assert not LOOKUP.search('getattr(pattern, "one_to_one", False)')


@pytest.mark.parametrize("name", [*FABRICS.names(), *VARIANTS])
def test_every_fabric_answers_every_capability(name: str) -> None:
    fabric = make_fabric(name)
    ranks = min(fabric.num_nodes, 8)
    cost = fabric.network_cost(ranks)
    assert cost is None or (isinstance(cost, NetworkCost) and cost.power_w > 0 and cost.capex_usd > 0)
    dims = fabric.grid_dims()
    assert isinstance(dims, tuple) and all(isinstance(size, int) and size >= 1 for size in dims)
    assert not dims or math.prod(dims) == fabric.num_nodes
    radix = fabric.switch_radix()
    assert radix is None or radix ** len(fabric.domain_sizes()) == fabric.num_nodes
    if fabric.has_ring_plan():
        gpus, rules = fabric.ring_plan(GroupLayout(ranks, 1, ranks))
        assert gpus >= 1 and all(isinstance(rule, int) for rule in rules)
    else:
        with pytest.raises(NotImplementedError):
            fabric.ring_plan(GroupLayout(ranks, 1, ranks))
    key = type(fabric).node_bandwidth_key()
    schema = FABRICS.entry(fabric.name).schema
    assert key is None or key in {field.name for field in fields(schema)}
    params = {"name": fabric.name} if radix is None else {"name": fabric.name, "r": radix}
    assert isinstance(type(fabric).sized_config(params, fabric.num_nodes), dict)


@pytest.mark.parametrize(("name", "expected"), [
    ("ramp", True), ("superpod", True), ("superpod_1to1", True), ("superpod_sipac", True), ("topoopt", True),
    ("expander", True), ("ideal", False), ("torus2d", False), ("sipac", False), ("leaf_spine", False)])
def test_fabrics_with_a_published_model_report_energy_and_cost(name: str, expected: bool) -> None:
    fabric = make_fabric(name)
    energy = network_energy(fabric, min(fabric.num_nodes, 64), iteration_time_s=2.0, num_steps=10)
    if expected:
        assert energy.scope in ("job", "fabric")
        assert energy.power_w > 0 and energy.cost_usd > 0
        assert energy.energy_per_iteration_j == pytest.approx(2.0 * energy.power_w)
        assert energy.energy_to_accuracy_j == pytest.approx(10 * energy.energy_per_iteration_j)
    else:
        assert energy.scope == NO_MODEL_SCOPE and math.isnan(energy.cost_usd) and math.isnan(energy.power_w)


def test_capabilities_that_some_fabrics_have() -> None:
    assert make_fabric("torus2d", dims=[4, 8]).grid_dims() == (4, 8)
    assert make_fabric("sipac", r=4, levels=2).switch_radix() == 4
    assert make_fabric("bcube", r=8, levels=2).switch_radix() == 8
    assert make_fabric("ramp").grid_dims() == () and make_fabric("ramp").switch_radix() is None
    assert make_fabric("topoopt").has_ring_plan() and not make_fabric("superpod").has_ring_plan()
    sized = type(make_fabric("sipac")).sized_config({"name": "sipac", "r": 8}, 512)
    assert sized["levels"] == 3
    with pytest.raises(ddlsim.InfeasibleError, match="radix"):
        type(make_fabric("bcube")).sized_config({"name": "bcube", "r": 8}, 100)
    assert type(make_fabric("torus2d")).sized_config({"name": "torus2d", "dims": [2, 2]}, 64)["num_nodes"] == 64


# Where a string equal to a fabric name means something else, or is a default not yet moved.
NOT_A_FABRIC_TABLE = {
    ("network/collectives/ring.py", "torus2d"): "the registered name of the 2D-torus ring algorithm",
    ("workload/models/topoopt.py", "topoopt"): "the registered name of TopoOpt's workload model",
    ("network/packet/experiment.py", "opsquare"): "the packet-level simulator's own network model",
    ("network/packet/opsquare_model.py", "opsquare"): "the packet-level simulator's own network model",
    ("tasks/packet.py", "opsquare"): "task=packet's choice of packet-level network model",
    ("network/api.py", "ideal"): "the public API's default fabric argument",
    ("capture/simulation.py", "ideal"): "the public API's default fabric argument",
    ("tasks/topoopt.py", "topoopt"): "the registered name of task=topoopt (TopoOpt's Sec. 5.1 systems)",
    ("validation/vtrain.py", "vtrain_a100"): "the measured cluster the validation reproduces (its fabric config)",
    **{("validation/contention_suite.py", name): "a fabric the SimGrid concurrency suite builds for its cases"
       for name in ("ideal", "opsquare", "superpod", "topoopt", "torus2d")},
    ("validation/published_tables.py", "superpod"): "the published runs' clusters (Selene; Meta's RoCE H100 cluster)",
    ("validation/iteration_cases.py", "ideal"): "a fabric the iteration-model contention cases build",
    ("tasks/workload_comm.py", "topoopt"): "the registered name of the TopoOpt List 1 workload models (a model)",
    **{("tasks/components.py", name): "a topology family of SiPAC Fig. 9's component counts, not a fabric config"
       for name in ("bcube", "sipac", "superpod")},
    **{("core/catalog.py", name): "the one explicit list of options, which names every fabric's module"
       for name in OPTIONS["fabric"]},
}


def _code_strings(path: Path) -> set[str]:
    """String constants of a module's code, docstrings aside."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


def test_no_fabric_name_outside_the_fabrics_and_configs() -> None:
    """Paper comparisons in report/references name the paper's roles (papers.yaml), not fabrics."""
    names = set(FABRICS.names()) | set(VARIANTS)
    skipped = (PACKAGE / "network" / "fabrics", PACKAGE / "report" / "references")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path.is_relative_to(directory) for directory in skipped):
            continue
        where = path.relative_to(PACKAGE).as_posix()
        found += [f"{where}: {name!r}" for name in sorted(_code_strings(path) & names)
                  if (where, name) not in NOT_A_FABRIC_TABLE]
    assert not found, "move fabric-specific tables into the fabric's methods or configs/:\n" + "\n".join(found)
