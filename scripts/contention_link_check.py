"""The iteration model (per-step link loads, and the coflow model before it) against flow level on
the concurrency suite and the iteration cases (see ddlsim/validation/link_check.py).

    python scripts/contention_link_check.py --help
"""

from ddlsim.validation.link_check import main

if __name__ == "__main__":
    main()
