"""RAMP Fig. 17 (and Table 10): DLRM iteration time, network overhead and RAMP's speed-up on 256 to
65,536 GPUs, beside the paper's reported ranges.

    python scripts/ramp_fig17_dlrm.py [--out DIR] [override ...]

Runs `experiment=ramp_dlrm` (the sweep of `ddlsim experiment=ramp_dlrm`) in this process and writes
results.csv, results.parquet, side_by_side.csv and figures/*.png|pdf under DIR (default
reproductions/ramp_dlrm). Overrides narrow or change the sweep, e.g. `fabric=ramp,superpod`.
"""

import sys

from ddlsim.sweep_inprocess import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_dlrm", __doc__))
