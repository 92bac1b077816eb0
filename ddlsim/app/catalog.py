"""Imports every room that registers names, so that the registries are complete."""

from __future__ import annotations


def load_all() -> None:
    import ddlsim.capture.model  # noqa: F401  (model=program; imports no torch)
    import ddlsim.chakra.model  # noqa: F401  (model=chakra; imports neither torch nor Chakra)
    import ddlsim.compute  # noqa: F401
    import ddlsim.network.collectives  # noqa: F401
    import ddlsim.network.fabrics  # noqa: F401
    import ddlsim.tasks  # noqa: F401
    import ddlsim.workload.models  # noqa: F401
