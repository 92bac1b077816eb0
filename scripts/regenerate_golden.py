"""Regenerate tests/golden/default_experiment.csv from the code (`ddlsim.app.golden`).

    python scripts/regenerate_golden.py

Run it after a change that is meant to alter the default experiment's numbers, and say why in
the commit. Never edit the golden file by hand: tests/test_end_to_end.py compares the CSV of a
fresh run with it byte for byte.
"""

from ddlsim.app.golden import regenerate_golden

if __name__ == "__main__":
    print(f"wrote {regenerate_golden()}")
