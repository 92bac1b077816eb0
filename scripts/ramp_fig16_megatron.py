"""RAMP Fig. 16 (and Table 9): training time of Megatron encoders for ten target losses on RAMP,
the SuperPod fat-tree, TopoOpt, OPSquare and SiPAC, with the communication share and RAMP's
speed-up, beside the paper's reported ranges.

    python scripts/ramp_fig16_megatron.py [--out DIR] [override ...]

Runs `experiment=ramp_megatron` (the sweep of `ddlsim experiment=ramp_megatron`) in this process and writes
results.csv, results.parquet, side_by_side.csv and figures/*.png|pdf under DIR (default
reproductions/ramp_megatron). Overrides narrow or change the sweep, e.g. `fabric=ramp,superpod`.
"""

import sys

from ddlsim.sweep_inprocess import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_megatron", __doc__))
