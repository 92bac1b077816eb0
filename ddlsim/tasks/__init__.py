"""Tasks: what one `ddlsim` run does with its built components. Importing registers them."""

from ddlsim.tasks import collective_sweep  # noqa: F401
from ddlsim.tasks import profile  # noqa: F401
