"""RAMP Figs. 18 and 20: completion time of every collective at 1 GB and maximum scale (best
strategy per system), and the all-reduce breakdown into latency, transfer and reduction compute,
beside the paper's values.

    python scripts/ramp_fig18_20_collectives.py [--out DIR] [override ...]

Runs `experiment=ramp_collectives` (the sweep of `ddlsim experiment=ramp_collectives`) in this process and writes
results.csv, results.parquet, side_by_side.csv and figures/*.png|pdf under DIR (default
reproductions/ramp_collectives). Overrides narrow or change the sweep, e.g. `fabric=ramp,superpod`.
"""

import sys

from ddlsim.sweep_inprocess import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_collectives", __doc__))
