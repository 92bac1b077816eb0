"""RAMP Figs. 18 and 20: every collective from 1 MB to 10 GB with every system's best strategy, and the
all-reduce breakdown.

    python scripts/ramp_fig18_20_collectives.py [--out DIR] [override ...]

Runs `experiment=ramp_fig18_20` (the sweep of `ddlsim experiment=ramp_fig18_20`) in this process and writes
results.csv, side_by_side.csv and figures/ under DIR (default reproductions/ramp_fig18_20). Overrides
narrow or change the sweep.
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_fig18_20", __doc__))
