"""RAMP Fig. 16 (and Table 9): training time of Megatron encoders for ten target losses on RAMP, the
SuperPod fat-tree, TopoOpt, OPSquare and SiPAC, with the communication share and RAMP's speed-up.

    python scripts/ramp_fig16_megatron.py [--out DIR] [override ...]

Runs `experiment=ramp_fig16` (the sweep of `ddlsim experiment=ramp_fig16`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/ramp_fig16). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig16", __doc__))
