"""The paper's stated numbers are judged from sweep rows, and only when the rows can tell."""

import math

from ddlsim.report.references.opsquare import check_claims


def row(network, nodes, locality, load, throughput, loss=0.0, local_mean=1e-6, remote_mean=3e-6,
        local_max=1e-6, remote_max=3e-6, lost_local=0):
    return {"network": network, "num_nodes": nodes, "locality": locality, "load": load, "throughput": throughput,
            "loss_ratio": loss, "latency_mean_s": (local_mean + remote_mean) / 2, "latency_local_mean_s": local_mean,
            "latency_remote_mean_s": remote_mean, "latency_local_max_s": local_max, "latency_remote_max_s": remote_max,
            "packets_lost_local": lost_local}


def by_claim(rows):
    return {check.claim: check for check in check_claims(rows)}


def test_leaf_spine_claims_follow_the_rows():
    rows = [row("leafspine", 256, 0.33, load, min(load, 0.35), loss=0.2 if load >= 0.8 else 0.0,
                remote_mean=25e-6) for load in (0.2, 0.6, 0.8, 1.0)]
    rows += [row("leafspine", 256, 0.67, load, min(load, 0.78)) for load in (0.2, 0.6, 0.8, 1.0)]
    checks = by_claim(rows)
    assert checks["leaf-spine loss steps up at 33% local traffic (spine buffer)"].agrees is True
    assert checks["leaf-spine per-node throughput exceeds 0.5 only with 2/3 local traffic"].agrees is True
    assert checks["leaf-spine inter-pod latency saturates"].agrees is True
    assert checks["leaf-spine at 1,024 nodes: even local traffic is lost"].agrees is None  # no 1,024-node rows


def test_opsquare_claims_fail_when_the_rows_disagree():
    rows = [row("opsquare", 256, 0.0, load, min(load, 0.4), loss=0.1 if load > 0.3 else 0.0,
                local_max=0.7e-6) for load in (0.2, 0.5, 1.0)]
    checks = by_claim(rows)
    assert checks["OPSquare throughput almost ideal up to load 0.6 (all localities)"].agrees is False
    assert checks["OPSquare: zero packet loss below load 0.6"].agrees is False
    assert checks["OPSquare intra-pod packets delivered within 0.5 us"].agrees is False
    saturation = checks["OPSquare saturation with all traffic inter-pod (the inter-pod channel limits it)"]
    assert saturation.agrees is False and saturation.measured.endswith("0.400")
    assert checks["OPSquare 256 -> 1,024 nodes worsens latency by less than 1 us"].agrees is None
    assert all(isinstance(check.agrees, bool) or check.agrees is None for check in check_claims(rows))
    assert not math.isnan(float(saturation.measured.split()[-1]))


def test_about_ten_times_lower_latency_means_five_to_twenty_times():
    """OPSquare Sec. 4's "a ten times lower latency for local packets" is not met by 23.7x."""
    for ratio, agrees in ((10.0, True), (5.0, True), (20.0, True), (23.7, False), (4.0, False)):
        rows = [row("opsquare", 256, 0.5, 0.1, 0.1, local_mean=43e-9),
                row("leafspine", 256, 0.5, 0.1, 0.1, local_mean=43e-9 * ratio)]
        check = next(check for check in check_claims(rows) if check.key == "ten_times")
        assert check.agrees is agrees, (ratio, check)
