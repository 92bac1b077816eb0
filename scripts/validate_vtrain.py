"""Validate ddlsim against the measured vTrain A100 runs (see ddlsim/validation/vtrain.py).

    python scripts/validate_vtrain.py --help
"""

from ddlsim.validation.vtrain import main

if __name__ == "__main__":
    main()
