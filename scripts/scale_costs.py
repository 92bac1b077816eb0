"""Where the time goes from 64 to 16,384 GPUs: Llama 3 70B on the H100 SuperPod fat-tree and on RAMP with
every at-scale cost and failures on, split into compute, exposed communication, bubble, interference,
stragglers, framework work and failures (docs/scale.md).

    python scripts/scale_costs.py [--out DIR] [override ...]

Runs `experiment=scale_costs` (the sweep of `ddlsim experiment=scale_costs`) in this process, prints the
split of each iteration's wall time and writes results.csv and figures/ (time_split.png among them) under
DIR (default reproductions/scale_costs). Overrides narrow or change the sweep (`parallel.gpus=1024,16384`).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main("scale_costs", __doc__))
