"""SiPAC Fig. 13: job completion time of hybrid-parallel communication (MP all-to-all, then DP all-
reduce, 100 MB) against per-CU bandwidth at 64 and 512 CUs.

    python scripts/sipac_fig13_hybrid.py [--out DIR] [override ...]

Runs `experiment=sipac_fig13` (the sweep of `ddlsim experiment=sipac_fig13`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/sipac_fig13). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("sipac_fig13", __doc__))
