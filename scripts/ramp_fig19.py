"""RAMP Fig. 19: RAMP's speed-up over bandwidth-matched baselines, 0.2 to 12.8 Tbps per node.

    python scripts/ramp_fig19.py [--out DIR] [override ...]

Runs `experiment=ramp_fig19` (the sweep of `ddlsim experiment=ramp_fig19`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/ramp_fig19). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig19", __doc__))
