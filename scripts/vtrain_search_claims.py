"""The plan the search ranks first for each measured vTrain configuration, its claimed speed-up
over the measured plan and where the gain comes from (see ddlsim/validation/search_claims.py).

    python scripts/vtrain_search_claims.py --help
"""

from ddlsim.validation.search_claims import main

if __name__ == "__main__":
    main()
