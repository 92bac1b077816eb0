"""Tasks: what one `ddlsim` run does with its built components. Importing registers them."""

from ddlsim.tasks import (
    alpha_beta,  # noqa: F401
    collective_sweep,  # noqa: F401
    hybrid,  # noqa: F401
    jobs,  # noqa: F401
    packet,  # noqa: F401
    pattern,  # noqa: F401
    profile,  # noqa: F401
    ramp_cost_tables,  # noqa: F401
    ramp_tables,  # noqa: F401
    search,  # noqa: F401
    steps,  # noqa: F401
    topoopt,  # noqa: F401
    topoopt_cost,  # noqa: F401
    topoopt_jobs,  # noqa: F401
    train,  # noqa: F401
)
