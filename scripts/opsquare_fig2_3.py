"""OPSquare paper Figs. 2 and 3: OPSquare vs the H100 leaf-spine, packet level (throughput, loss
and latency vs offered load).

    python scripts/opsquare_fig2_3.py [--out DIR] [override ...]          # quick: 256 nodes, 3 x 3 points
    python scripts/opsquare_fig2_3.py --full [--out DIR] [override ...]   # the paper's 160 points

Runs `experiment=opsquare_fig2_3` in this process (the quick mode narrows it to 256 nodes,
localities 0, 0.33, 0.67 and loads 0.2, 0.6, 1.0) and writes results.csv, side_by_side.csv and
figures/ under DIR (default reproductions/opsquare_fig2_3). `ddlsim experiment=opsquare_fig2_3
hydra/launcher=local_parallel` runs the full sweep in parallel and resumably.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

QUICK = ["task.num_nodes=256", "task.locality=0.0,0.33,0.67", "task.load=0.2,0.6,1.0"]

if __name__ == "__main__":
    argv = sys.argv[1:]
    full = "--full" in argv
    argv = [arg for arg in argv if arg != "--full"]
    sys.exit(reproduce_main("opsquare_fig2_3", __doc__, argv if full else [*argv, *QUICK]))
