"""Fit the A100 kernel-roofline constants on the measured single-node vTrain runs (see ddlsim/validation/fit_vtrain.py).

    python scripts/fit_vtrain.py --help
"""

from ddlsim.validation.fit_vtrain import main

if __name__ == "__main__":
    main()
