"""RAMP Tables 9 (Megatron) and 10 (DLRM) rebuilt by ddlsim's partitioners, beside the paper.

    python scripts/ramp_tables_9_10.py [--out DIR] [override ...]
    python scripts/ramp_tables_9_10.py parallel=offload              # RAMP 7.3's offloaded checkpoints
    python scripts/ramp_tables_9_10.py task.torchrec_max_gpus=1024   # also ask torchrec's planner

Runs `experiment=ramp_tables_9_10` (`ddlsim experiment=ramp_tables_9_10`) in this process and writes
results.csv (one row per cell) and side_by_side.csv under DIR (default reproductions/ramp_tables_9_10).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("ramp_tables_9_10", __doc__))
