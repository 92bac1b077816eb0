"""The systems of TopoOpt Sec. 5.6 (Fig. 16), a cluster shared by several jobs.

TopoOpt itself gives each job a shard of its own (App. C: "The complete isolation ensures each job
gets its dedicated resources"): one `baselines.static_fabric` of the job's servers per job. The
Fat-tree and the Oversub. Fat-tree are one fat-tree of the whole cluster (`shared_fat_tree`) on
which the jobs are placed side by side. Both declare every physical uplink of their edge switches
and pods apart, one per aggregation and core switch of a k-ary fat-tree, with ECMP choosing one per
flow (`ddlsim.network.fabrics.fat_tree.ecmp`), so that flows of different jobs can collide on one
uplink as they do in the paper's packet simulations (Sec. 5.1: htsim, ECMP on the fat-trees).
"""

from __future__ import annotations

from ddlsim.core import units
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.topoopt.baselines import TOPOOPT

FAT_TREE, OVERSUB_FAT_TREE = "topoopt_fat_tree", "topoopt_fat_tree_oversub"
FIG16_SYSTEMS = (TOPOOPT, FAT_TREE, OVERSUB_FAT_TREE)
SHARDED = (TOPOOPT,)  # systems whose jobs get a dedicated partition each


def fat_tree_arity(num_servers: int) -> int:
    """The smallest even k whose k-ary fat-tree holds `num_servers` servers (k^3 / 4 >= servers)."""
    k = 2
    while k ** 3 // 4 < num_servers:
        k += 2
    return k


def fat_tree_tiers(num_servers: int, gpus_per_server: int) -> list[int]:
    """Tier sizes in GPUs of the smallest k-ary fat-tree (k even) holding `num_servers` servers:
    k / 2 servers per edge switch, k^2 / 4 per pod, k^3 / 4 in all."""
    k = fat_tree_arity(num_servers)
    return [k // 2 * gpus_per_server, k * k // 4 * gpus_per_server, k ** 3 // 4 * gpus_per_server]


def fat_tree_uplinks(num_servers: int, edge_oversubscription: float = 1.0) -> list[int]:
    """Physical uplinks of an edge switch and of a pod: k / 2 and (k / 2)^2 at 1:1, each as fast as a
    server's link; an edge switch at r:1 keeps k / (2 r) of its uplinks (the 2:1 Oversub. Fat-tree
    omits half, Sec. 5.1). Falls back to one bundle per domain ([]) where r does not divide k / 2."""
    half = fat_tree_arity(num_servers) // 2
    edge = half / edge_oversubscription
    if edge < 1 or edge != int(edge) or (half * half) % int(edge):
        return []
    return [int(edge), half * half]


def shared_fat_tree(system: str, num_servers: int, gpus_per_server: int, degree: int,
                    link_bandwidth_bps: float) -> Fabric:
    """TopoOpt Sec. 5.1's Fat-tree (cost-equivalent d x B') or Oversub. Fat-tree (d x B, 2:1 at the
    ToR uplinks) for the whole cluster of `num_servers` servers."""
    from ddlsim.network.api import make_fabric
    from ddlsim.network.fabrics.topoopt.cost import cost_equivalent_fat_tree_bandwidth_bps

    if system == FAT_TREE:
        per_server = cost_equivalent_fat_tree_bandwidth_bps(num_servers, degree, link_bandwidth_bps)
        oversubscription = [1.0, 1.0]
    else:
        per_server, oversubscription = degree * link_bandwidth_bps, [2.0, 1.0]
    nic = f"{per_server / gpus_per_server / units.GIGA:.6g}Gbps"
    return make_fabric(system, num_nodes=num_servers * gpus_per_server, gpus_per_node=gpus_per_server,
                       tier_sizes=fat_tree_tiers(num_servers, gpus_per_server), oversubscription=oversubscription,
                       nic_bandwidth=nic, uplinks_per_domain=fat_tree_uplinks(num_servers, oversubscription[0]))
