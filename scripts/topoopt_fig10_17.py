"""TopoOpt Fig. 10 (interconnect cost) and Fig. 17 (OCS-reconfig vs reconfiguration latency).

    python scripts/topoopt_fig10_17.py [--out DIR] [override ...]

Runs `experiment=topoopt_fig10` and `experiment=topoopt_fig17` (the sweeps of `ddlsim
experiment=...`) in this process and writes results.csv, side_by_side.csv and figures/ under
DIR/<experiment> (default reproductions/<experiment>).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main(["topoopt_fig10", "topoopt_fig17"], __doc__))
