"""Chakra's protobuf schema, imported on demand, and the names both directions share."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ddlsim.errors import ConfigError

INSTALL_HINT = ("install MLCommons Chakra from its repository (pip install "
                "git+https://github.com/mlcommons/chakra; the package named 'chakra' on PyPI is another project)")
RECORD_ATTR = "ddlsim.record"  # the whole captured record, as JSON: what makes a round trip exact
METADATA_ATTR = "ddlsim.program"  # the program's metadata (GlobalMetadata), as JSON
CAPTURED_RANK_ATTR = "ddlsim.captured_rank"  # which captured rank's records this file's rank runs
ANALYTIC_ATTR = "ddlsim.analytic"  # an analytic workload's record (GlobalMetadata), as JSON: `graph_records`
STAGE_ATTR = "ddlsim.stage"  # the pipeline stage an analytic export's rank runs (GlobalMetadata)
OP_ATTR = "ddlsim.op"  # one op of an analytic iteration graph, as JSON (on the first node of the op)
COMM_GROUPS_FILE = "comm_group.json"  # analytic export: pg_name -> ranks (ASTRA-sim's comm-group configuration)
SCHEMA_VERSION = "0.0.4"

# ddlsim collective op -> Chakra CollectiveCommType name
COMM_TYPES = {"all_reduce": "ALL_REDUCE", "reduce": "REDUCE", "all_gather": "ALL_GATHER", "gather": "GATHER",
              "scatter": "SCATTER", "broadcast": "BROADCAST", "all_to_all": "ALL_TO_ALL",
              "reduce_scatter": "REDUCE_SCATTER", "barrier": "BARRIER"}


def require_chakra() -> tuple[ModuleType, Any, Any]:
    """(et_def_pb2, encodeMessage, decodeMessage), or a ConfigError saying how to install Chakra."""
    try:
        from chakra.schema.protobuf import et_def_pb2
        from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage
    except ImportError as error:
        raise ConfigError("chakra", "not installed", f"{INSTALL_HINT} ({error})") from None
    return et_def_pb2, encodeMessage, decodeMessage


def attribute_value(attribute: Any) -> Any:
    """The value of a Chakra AttributeProto, whichever of its fields is set."""
    which = attribute.WhichOneof("value")
    if which is None:
        return None
    value = getattr(attribute, which)
    return list(value.values) if which.endswith("_list") else value
