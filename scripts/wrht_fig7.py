"""WRHT Fig. 7: optical (O-Ring, WRHT) vs electrical (E-Ring, E-RD) all-reduce time, 128 to 1,024
nodes.

    python scripts/wrht_fig7.py [--out DIR] [override ...]

Runs `experiment=wrht_fig7` (the sweep of `ddlsim experiment=wrht_fig7`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/wrht_fig7). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("wrht_fig7", __doc__))
