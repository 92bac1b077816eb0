"""Chakra execution traces (MLCommons Chakra, the workload format of ASTRA-sim), in and out.

- `write_chakra(program, directory)` (also ``training.chakra=true`` on the command line): a
  `CapturedProgram` as one ET file per rank, ``<name>.<rank>.et``.
- `write_workload_chakra(workload, graph, directory)` (also ``training.chakra=true`` on an
  analytic model): an analytic workload's iteration graph, one ET file per rank.
- `load_chakra(trace)`: a directory or glob of ET files as a `CapturedProgram`, priced like
  any capture on any fabric and device (``model=chakra model.trace=...``); ETs written from an
  analytic workload come back as its graph (an `AnalyticTrace`).

The schema is ddlsim's own (`et_def.proto`, wire-compatible with MLCommons Chakra's); nothing
here is imported by the main job. docs/chakra.md has the field conventions and the limits.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "load_chakra": "ddlsim.chakra.load",
    "write_chakra": "ddlsim.chakra.export",
    "write_workload_chakra": "ddlsim.chakra.analytic_export",
})
__all__ = ["load_chakra", "write_chakra", "write_workload_chakra"]
