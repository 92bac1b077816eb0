"""RAMP Fig. 18: every collective at 1 GB on 65,536 nodes with the ring-based strategies of RAMP 7.6,
the fastest per system.

    python scripts/ramp_fig18.py [--out DIR] [override ...]

Runs `experiment=ramp_fig18` (the sweep of `ddlsim experiment=ramp_fig18`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/ramp_fig18). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig18", __doc__))
