"""The fluid contention engine against SimGrid on the concurrency suite, as a markdown table
(see ddlsim/validation/contention_table.py; needs simgrid).

    python scripts/contention_reference_table.py --help
"""

from ddlsim.validation.contention_table import main

if __name__ == "__main__":
    main()
