"""TopoOpt Fig. 11 (six models, seven interconnects) and Figs. 12-14 (DLRM with 128 tables:
iteration time, bandwidth tax, path length).

    python scripts/topoopt_fig11_12.py [--out DIR] [override ...]

Runs `experiment=topoopt_fig11` and `experiment=topoopt_fig12_14` (the sweeps of `ddlsim
experiment=...`) in this process and writes results.csv, side_by_side.csv and figures/ under
DIR/<experiment> (default reproductions/<experiment>).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main(["topoopt_fig11", "topoopt_fig12_14"], __doc__))
