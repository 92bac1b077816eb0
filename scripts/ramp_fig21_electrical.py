"""RAMP Fig. 21, electrical half: all-reduce time vs number of GPUs on the 1:1 SuperPod fat-tree.

    python scripts/ramp_fig21_electrical.py [--out DIR] [override ...]

Runs `experiment=ramp_fig21` (the sweep of `ddlsim experiment=ramp_fig21`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/ramp_fig21). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig21", __doc__))
