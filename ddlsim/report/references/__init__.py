"""One module per seed paper, each registering the side-by-side of its reproductions
(`ddlsim.report.reference.register_reference`). Importing this package registers them all."""

from ddlsim.report.references import (  # noqa: F401
    opsquare,
    ramp_collectives,
    ramp_fig22_23,
    ramp_tables,
    ramp_training,
    sipac,
    topoopt,
    topoopt_degree,
    topoopt_shared,
    wrht,
)
