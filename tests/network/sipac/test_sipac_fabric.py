"""SiPAC and electronic BCube fabrics, and SiPCO priced on them against Table II."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.collectives.sipco import Sipco
from ddlsim.network.collectives.sipco_logic import table2_terms
from ddlsim.network.estimate import StepPricer, price_explicit, price_schedule
from ddlsim.network.fabrics.bcube import Bcube, BcubeConfig
from ddlsim.network.fabrics.sipac import Sipac, SipacConfig, bcube_hops
from ddlsim.network.verify import compare_views, verify_explicit

SIPAC = Sipac.from_config(SipacConfig())  # r = 8, L = 3, 2,048 Gb/s per CU
BCUBE = Bcube.from_config(BcubeConfig())


def test_topology_figures() -> None:
    assert SIPAC.num_nodes == 512
    assert SIPAC.link_bandwidth_bps == pytest.approx(2048e9 / 3)  # B = w u per port
    assert SIPAC.pair_bandwidth_bps == pytest.approx(2048e9 / 3 / 8)  # b = B / r
    assert SIPAC.wavelength_rate_bps == pytest.approx(2048e9 / 3 / 64)
    assert SIPAC.hop_latency_s == pytest.approx(2e-6)  # 1 us per link, doubled through the WSS
    with pytest.raises(ConfigError):
        FABRICS.make("sipac", wavelengths=12)  # not a multiple of r = 8
    with pytest.raises(ConfigError):
        FABRICS.make("sipac", r=1)


def test_every_cu_reaches_l_times_r_minus_1_neighbours_in_one_hop() -> None:
    src = np.zeros(512, dtype=np.int64)
    dst = np.arange(512)
    _, hops = bcube_hops(src, dst, 8, 3)
    assert np.count_nonzero(hops == 1) == 3 * 7
    assert hops.max() == 3  # the diameter is L
    routes = SIPAC.route(src, dst, np.ones(512))
    assert np.allclose(routes.latency_s, hops * 2e-6)


@pytest.mark.parametrize("n", [8, 64, 512])
def test_sipco_all_reduce_on_sipac_in_closed_form(n: int) -> None:
    req = ScheduleRequest.single_group("all_reduce", n, SIPAC, size_bytes=10**8)
    cost = price_schedule(StepPricer(SIPAC), Sipco().compact(req), req.layout, req.placement, req.size_bytes, None)
    levels = round(np.log(n) / np.log(8))
    link = SIPAC.link_bandwidth_bps
    assert cost.num_steps == levels + 1
    assert cost.latency_s == pytest.approx((levels + 1) * 2e-6)
    # Each step, every CU pair carries one chunk n / (r L) at b = B / r.
    assert cost.transfer_s == pytest.approx((levels + 1) * 10**8 * 8 / (levels * link))
    # Table II's bandwidth term assumes the link's B is shared by the r - 1 neighbours only; the
    # WSS keeps one of r wavelength groups for the sender itself, hence the factor r / (r - 1).
    _, table = table2_terms("sipco", 8**levels, 10**8, 2e-6, 8 / link, r=8, levels=levels)
    assert cost.transfer_s / table == pytest.approx(8 / 7)


def test_sipco_on_electronic_bcube_matches_table2_bandwidth_term() -> None:
    req = ScheduleRequest.single_group("all_reduce", 512, BCUBE, size_bytes=10**8)
    cost = price_schedule(StepPricer(BCUBE), Sipco().compact(req), req.layout, req.placement, req.size_bytes, None)
    _, table = table2_terms("sipco", 512, 10**8, 0.0, 8 / BCUBE.port_bandwidth_bps, r=8, levels=3)
    assert cost.transfer_s == pytest.approx(table)
    assert cost.latency_s == pytest.approx(4 * BCUBE.hop_latency_s)
    assert BCUBE.hop_latency_s > SIPAC.hop_latency_s  # switch latency and a stored packet per hop


def test_sipco_support() -> None:
    algorithm = Sipco()
    assert all(algorithm.supports(SIPAC, "all_reduce", n) is None for n in (8, 64, 512))
    assert algorithm.supports(SIPAC, "all_reduce", 100) is not None
    assert algorithm.supports(FABRICS.make("ideal"), "all_reduce", 64) is not None


SMALL = (Sipac.from_config(SipacConfig(levels=2)), Bcube.from_config(BcubeConfig(levels=2)))  # 64 CUs


# Every op on 64 CUs (r = 8, L = 2); three on the 512 CUs of SiPAC VI-B (the registry-wide suite
# verifies every op at many more sizes; a 512-CU all-to-all lists 2.4 million rows).
CASES = [(op, 64) for op in CollectiveOp if op is not CollectiveOp.SEND_RECV] + [
    (CollectiveOp(op), 512) for op in ("all_reduce", "reduce_scatter", "broadcast")]


@pytest.mark.parametrize(("op", "n"), CASES, ids=[f"{op.value}-{n}" for op, n in CASES])
def test_sipco_is_correct_and_views_agree_on_both_fabrics(op: CollectiveOp, n: int) -> None:
    for fabric in ((SIPAC, BCUBE) if n == 512 else SMALL):
        req = ScheduleRequest.single_group(op, n, fabric, root=n - 1 if op.is_rooted else 0)
        explicit = Sipco().explicit(req)
        verify_explicit(explicit)
        compact = Sipco().compact(req)
        compare_views(compact, explicit)
        a = price_schedule(StepPricer(fabric), compact, req.layout, req.placement, 10**6, None)
        b = price_explicit(fabric, explicit, req.layout, req.placement, 10**6, None)
        assert a.time_s == pytest.approx(b.time_s, rel=1e-9)
