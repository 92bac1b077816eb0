"""task=components (SiPAC Fig. 9) and task=workload_comm (SiPAC Fig. 12) through the package."""

from __future__ import annotations

import pandas as pd
import pytest

import ddlsim
from ddlsim.core.errors import ConfigError
from ddlsim.core.papers import load_papers
from ddlsim.report.references.index import check_rows, get_reference


def _rows(*overrides: str) -> pd.DataFrame:
    parts = ddlsim.build_components(["hydra.mode=RUN", *overrides])
    return pd.DataFrame(parts.task.run(parts).rows)


def test_fig9_rows_and_every_paper_statement_is_compared():
    frame = _rows("experiment=sipac_fig9")
    check_rows(frame, "sipac_fig9")
    assert set(frame["topology"]) == {"sipac_l2", "sipac_l3", "bcube_l2", "bcube_l3", "torus_l2", "torus_l3",
                                      "fat_tree", "dragonfly", "superpod"}
    assert (frame["links_per_cu"] * frame["num_ranks"] == frame["links"]).all()
    comparisons = get_reference("sipac_fig9").compare(frame, load_papers().reference("sipac_fig9"))
    keys = {comparison.key for comparison in comparisons}
    assert keys == set(load_papers().reference("sipac_fig9").values)
    equal_links = [c.ours for c in comparisons if c.key == "links_equal"]
    assert equal_links == ["2 / 2 / 2", "3 / 3 / 3"]


def test_fig9_bad_entries_are_config_errors():
    with pytest.raises(ConfigError, match="task.topologies = 'fat_tree:2'"):
        ddlsim.build_components(["task=components", "task.topologies=[fat_tree:2]"])
    with pytest.raises(ConfigError, match="task.lines_per_pair = 0"):
        ddlsim.build_components(["task=components", "task.lines_per_pair=0"])


def test_fig12_sums_the_models_gradient_all_reduce_and_sipco_beats_mesh_on_sipac():
    frame = _rows("experiment=sipac_fig12", "task.models=[vgg16]").set_index(["num_ranks", "algorithm"])
    assert set(frame.index) == {(p, a) for p in (64, 512) for a in ("hierarchical", "direct", "sipco")}
    assert (frame["size_bytes"] == 4 * 138_357_544).all()  # VGG-16's fp32 gradients, one all-reduce
    assert (frame["time_s"] >= frame["latency_s"] + frame["transfer_s"]).all()
    for p in (64, 512):
        assert frame.loc[(p, "sipco"), "time_s"] < frame.loc[(p, "direct"), "time_s"]
        assert frame.loc[(p, "direct"), "time_s"] < frame.loc[(p, "hierarchical"), "time_s"]


def test_fig12_more_bandwidth_never_slows_the_workload():
    slow, fast = (_rows("experiment=sipac_fig12", "task.models=[bert]", "task.num_ranks=[64]",
                        f"fabric.cu_bandwidth={bandwidth}")["time_s"] for bandwidth in ("512Gbps", "2048Gbps"))
    assert (fast.to_numpy() < slow.to_numpy()).all()


def test_fig12_unknown_model_is_a_config_error():
    with pytest.raises(ConfigError, match="task.models = 'gpt'"):
        ddlsim.build_components(["experiment=sipac_fig12", "hydra.mode=RUN", "task.models=[gpt]"])
