"""The iteration-level (coflow) contention model against flow level on the concurrency suite
(see ddlsim/validation/coflow_check.py).

    python scripts/contention_coflow_check.py --help
"""

from ddlsim.validation.coflow_check import main

if __name__ == "__main__":
    main()
