"""Score ddlsim on vTrain, Megatron-LM SC'21 Table 1 and Llama 3 Table 4, leaving one source out
(see ddlsim/validation/published.py).

    python scripts/validate_published.py --help
"""

from ddlsim.validation.published import main

if __name__ == "__main__":
    raise SystemExit(main())
