"""Chakra execution traces as a program that ddlsim prices (``model=chakra``).

Files: a directory (every ``*.et`` in it) or a glob; a file's rank is the number before ``.et``
(``name.<rank>.et``, Chakra's naming), and the ranks must be 0..n-1. Every file's graph is
checked first (`checks`): a broken one is a one-line error naming the file and the node.

- ETs that ddlsim wrote from a capture (`export.write_chakra`) carry each record whole: the
  program comes back exactly, so it prices exactly as the capture did.
- ETs that ddlsim wrote from an analytic workload (`analytic_export`) come back as that workload's
  iteration graph (`analytic_load.AnalyticTrace`).
- Other ETs come back as the program `foreign.foreign_program` reads from their nodes.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ddlsim.capture.program import CapturedProgram
from ddlsim.capture.records import RECORD_COLUMNS
from ddlsim.chakra.analytic_load import analytic_trace
from ddlsim.chakra.checks import check_graph, check_node, check_pairs
from ddlsim.chakra.files import RANK_OF_FILE, attributes, read_et, trace_files
from ddlsim.chakra.foreign import foreign_program
from ddlsim.chakra.schema import ANALYTIC_ATTR, CAPTURED_RANK_ATTR, METADATA_ATTR, RECORD_ATTR
from ddlsim.core.errors import ConfigError


def _own_program(headers: list[Any], nodes_of: list[list[Any]]) -> CapturedProgram:
    meta = json.loads(attributes(headers[0])[METADATA_ATTR])
    captured_ranks = [attributes(header).get(CAPTURED_RANK_ATTR) for header in headers]
    records = [json.loads(attributes(node)[RECORD_ATTR])
               for rank in meta["ranks"] for node in nodes_of[captured_ranks.index(rank)]]
    return CapturedProgram.from_metadata(meta, pd.DataFrame(records, columns=["rank", *RECORD_COLUMNS]))


def load_chakra(trace: str, *, key: str = "trace") -> Any:
    """The program the ET files of `trace` (a directory or a glob) describe: a `CapturedProgram`, or
    an `analytic_load.AnalyticTrace` for ETs ddlsim wrote from an analytic workload; see the
    module docstring."""
    files = trace_files(trace, key)
    if ANALYTIC_ATTR in attributes(read_et(files[0], header_only=True)[0]):
        return analytic_trace(trace, files, key)
    read = [read_et(file) for file in files]
    headers, nodes_of = [header for header, _ in read], [nodes for _, nodes in read]
    for file, nodes in zip(files, nodes_of, strict=True):
        check_graph(file, nodes)
        for node in nodes:
            check_node(file, node, len(files))
    if METADATA_ATTR in attributes(headers[0]):
        program = _own_program(headers, nodes_of)
        if program.num_ranks != len(files):
            raise ConfigError(key, trace, f"holds {len(files)} rank files but the program ran on "
                                          f"{program.num_ranks} ranks")
        return program
    check_pairs(files, nodes_of)
    return foreign_program(RANK_OF_FILE.sub("", files[0].name) or "chakra", files, nodes_of)
