"""RAMP Fig. 17 (and Table 10): DLRM iteration time, network overhead and RAMP's speed-up on 256 to
65,536 GPUs.

    python scripts/ramp_fig17_dlrm.py [--out DIR] [override ...]

Runs `experiment=ramp_fig17` (the sweep of `ddlsim experiment=ramp_fig17`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/ramp_fig17). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig17", __doc__))
