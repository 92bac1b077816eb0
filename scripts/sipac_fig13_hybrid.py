"""SiPAC Fig. 13: job completion time of hybrid-parallel communication (MP all-to-all, then
DP all-reduce, 100 MB) against per-CU bandwidth from 128 to 4,096 Gb/s at 64 and 512 CUs,
beside the paper's statements.

    python scripts/sipac_fig13_hybrid.py [--out DIR] [override ...]

Runs `experiment=sipac_hybrid` (the sweep of `ddlsim experiment=sipac_hybrid`) in this process and writes
results.csv, results.parquet, side_by_side.csv and figures/*.png|pdf under DIR (default
reproductions/sipac_hybrid). Overrides narrow or change the sweep, e.g. `fabric=ramp,superpod`.
"""

import sys

from ddlsim.sweep_inprocess import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("sipac_hybrid", __doc__))
