"""RAMP Fig. 15: algorithmic steps of a reduce-scatter vs scale, per strategy.

    python scripts/ramp_fig15.py [--out DIR] [override ...]

Runs `experiment=ramp_fig15` (the sweep of `ddlsim experiment=ramp_fig15`) in this process and
writes results.csv, side_by_side.csv and figures/fig15.png|pdf under DIR (default
reproductions/ramp_fig15).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig15", __doc__))
