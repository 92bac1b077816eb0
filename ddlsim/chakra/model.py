"""`model=chakra`: a set of Chakra execution traces, priced like a captured program.

    ddlsim model=chakra model.trace=traces/ fabric=ramp,superpod,torus2d -m

``trace`` is a directory of ``<name>.<rank>.et`` files or a glob (`load.load_chakra`). The
traces are read once per process and priced by the capture's path (`ddlsim.capture.simulation`),
so rows, columns and ``trace.json`` are those of ``model=program``. Traces that ddlsim wrote from
an analytic model come back as its iteration graph and are priced as that model is
(`analytic_load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ddlsim.capture.cache import CAPTURES, file_key
from ddlsim.capture.model import ProgramModel
from ddlsim.capture.model import _check_parallel as check_parallel
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import MODELS


@dataclass
class ChakraConfig:
    """Chakra ETs to price: `trace`, a directory or a glob of ``<name>.<rank>.et`` files."""

    name: str = "chakra"
    trace: str = ""
    check_memory: bool = True


@MODELS.register("chakra", ChakraConfig)
@dataclass(frozen=True)
class ChakraModel(ProgramModel):
    """Chakra execution traces (ASTRA-sim's workload format) as a program to price."""

    trace_files: tuple[tuple[str, float], ...] = ()
    trace: str = ""

    @classmethod
    def from_config(cls, config: ChakraConfig) -> ChakraModel:
        from ddlsim.chakra.files import trace_files

        # No trace yet is a model that cannot run: it builds (as every option of the group does) and
        # says what is missing when a run needs the program.
        files = tuple(file_key(str(path)) for path in trace_files(config.trace)) if config.trace else ()
        return cls(name=config.name, trace=config.trace, trace_files=files, check_memory=config.check_memory)

    def definition(self) -> tuple:
        return ("chakra", self.trace_files, self.name)

    def program(self):  # noqa: ANN201 (a CapturedProgram; the capture room is imported lazily)
        return CAPTURES.get(self.definition(), self._capture)

    def train_on_fabric(self, parallel: Any, device: Any, compute: Any, fabric: Any, algorithm: Any,
                        settings: Any) -> Any:
        """Price the traces on `fabric`: an analytic export as its own graph, others as a capture."""
        program = self.program()
        if getattr(program, "simulate_on", None) is None:
            return super().train_on_fabric(parallel, device, compute, fabric, algorithm, settings)
        check_parallel(parallel)
        return program.simulate_on(fabric, algorithm, device, settings)

    def build_workload(self, parallel: Any, memory_bytes: int) -> Any:
        program = self.program()
        if getattr(program, "simulate_on", None) is None:
            return super().build_workload(parallel, memory_bytes)
        check_parallel(parallel)
        return program.workload

    def _capture(self):  # noqa: ANN202
        from ddlsim.chakra.load import load_chakra

        if not self.trace:
            raise ConfigError("model.trace", self.trace, "give a directory or a glob of Chakra ET files")
        try:
            return load_chakra(self.trace)
        except ConfigError as error:
            raise error.under("model") from None
