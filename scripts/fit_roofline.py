"""Fit the roofline efficiencies to measured compute profiles (see ddlsim/compute/fit_roofline.py).

    python scripts/fit_roofline.py --help
"""

from ddlsim.compute.fit_roofline import main

if __name__ == "__main__":
    main()
