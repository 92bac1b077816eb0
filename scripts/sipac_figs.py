"""SiPAC Fig. 7 (Table II's all-reduce costs) and Figs. 10 and 11 (primitive traffic patterns on
512 CUs).

    python scripts/sipac_figs.py [--out DIR] [override ...]

Runs `experiment=sipac_fig7` and `experiment=sipac_fig10_11` in this process and writes each
one's results.csv, side_by_side.csv and figures/ under DIR/<experiment> (default
reproductions/<experiment>).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main(["sipac_fig7", "sipac_fig10_11"], __doc__))
