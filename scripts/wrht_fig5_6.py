"""WRHT Figs. 4, 5 and 6: all-reduce time on the WDM optical ring by group size, wavelengths and
nodes, beside the averages the paper's text states.

    python scripts/wrht_fig5_6.py [--out DIR] [override ...]

Runs `experiment=wrht_fig4`, `wrht_fig5` and `wrht_fig6` in this process and writes each one's
results.csv, side_by_side.csv and figures/ under DIR/<experiment> (default
reproductions/<experiment>).
"""

import sys

from ddlsim.app.sweep.reproduce import reproduce_main

if __name__ == "__main__":
    sys.exit(reproduce_main(["wrht_fig4", "wrht_fig5", "wrht_fig6"], __doc__))
