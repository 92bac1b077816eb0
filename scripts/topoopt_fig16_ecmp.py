"""TopoOpt Fig. 16's fat-trees at flow level: the jobs' inter-server rings with each uplink declared
apart (ECMP) against one bundle per domain, on the experiment's random placements.

    python scripts/topoopt_fig16_ecmp.py [--loads 5 27] [--seeds 0 1 2] [--size-mb 64]

Each job runs a ring all-reduce over one GPU of each of its servers (the inter-server phase of a
hierarchical all-reduce: one flow per server at a time) at once with the other jobs, in the
flow-level engine (`ddlsim.network.contention.flows`), whose paths are the fabric's own links; the
iteration model of `experiment=topoopt_fig16` sees only the declared cuts. Prints, per system,
links, load and seed, the mean and largest slowdown of a job's ring beside the others.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from ddlsim.app.catalog import load_all
from ddlsim.network.contention.flows import run_flows
from ddlsim.network.contention.job_placement import place_jobs_on_nodes, top_domain_nodes
from ddlsim.network.fabrics.topoopt.shared_cluster import FAT_TREE, OVERSUB_FAT_TREE, shared_fat_tree
from ddlsim.validation.contention_suite import MB, collective

GPUS_PER_SERVER, DEGREE, LINK_BPS = 4, 8, 100e9


def slowdowns(system: str, ecmp: bool, num_jobs: int, seed: int, num_servers: int = 432, servers_per_job: int = 16,
              size_bytes: int = 64 * MB) -> np.ndarray:
    """Each job's ring slowdown beside the others on `system`, its uplinks apart (`ecmp`) or bundled."""
    fabric = shared_fat_tree(system, num_servers, GPUS_PER_SERVER, DEGREE, LINK_BPS)
    if not ecmp:
        fabric = dataclasses.replace(fabric, uplinks_per_domain=())
    placements = place_jobs_on_nodes(fabric.num_nodes, [servers_per_job * GPUS_PER_SERVER] * num_jobs, "random",
                                      slot_nodes=GPUS_PER_SERVER, seed=seed,
                                      domain_nodes=top_domain_nodes(fabric.domain_sizes(), fabric.num_nodes))
    jobs = [collective(fabric, "ring", "all_reduce", list(placement.nodes[::GPUS_PER_SERVER]), size_bytes)
            for placement in placements]
    return np.array([job.slowdown for job in run_flows(fabric, jobs).jobs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loads", type=int, nargs="+", default=[5, 27], help="numbers of jobs")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="placement seeds")
    parser.add_argument("--size-mb", type=int, default=64, help="all-reduce size per job (MiB)")
    args = parser.parse_args()
    load_all()
    print("| system | uplinks | jobs | seed | mean slowdown | largest slowdown |\n|---|---|---:|---:|---:|---:|")
    for system in (FAT_TREE, OVERSUB_FAT_TREE):
        for ecmp in (False, True):
            for num_jobs in args.loads:
                for seed in args.seeds:
                    values = slowdowns(system, ecmp, num_jobs, seed, size_bytes=args.size_mb * MB)
                    print(f"| {system} | {'ECMP, each apart' if ecmp else 'one bundle'} | {num_jobs} | {seed} | "
                          f"{values.mean():.3f} | {values.max():.3f} |", flush=True)


if __name__ == "__main__":
    main()
