"""WRHT Table 1 and Fig. 2 (communication steps), then Section 4's numbers: the channels first fit
assigns to each WRHT step against Section 4.1.2's counts, and the largest group size m' that the
optical budget of Eqs. 7 to 13 gives for the default device parameters.

    python scripts/wrht_table1.py [--out DIR] [override ...]

Runs `experiment=wrht_table1` in this process (results.csv, side_by_side.csv, figures/ under DIR,
default reproductions/wrht_table1), then writes wavelengths.csv and optical_budget.csv there.
"""

import sys
from pathlib import Path

from ddlsim.app.sweep.reproduce import reproduce_main
from ddlsim.network.fabrics.optical_ring.section4 import budget_rows, required_snr_text, wavelength_rows
from ddlsim.report.table import write_rows

if __name__ == "__main__":
    status = reproduce_main("wrht_table1", __doc__)
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else Path("reproductions/wrht_table1")
    if status == 0:
        for stem, title, rows in (
                ("wavelengths", "Wavelengths per WRHT step: Section 4.1.2 vs first fit (per direction)",
                 wavelength_rows()),
                ("optical_budget", f"Eqs. 7-13 with the default device parameters ({required_snr_text()}): "
                                   "largest group size m'", budget_rows())):
            print(f"\n{title}\n{write_rows(rows, out / f'{stem}.csv')}")
    sys.exit(status)
