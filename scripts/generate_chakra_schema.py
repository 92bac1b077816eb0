"""Compile ddlsim/chakra/et_def.proto into ddlsim/chakra/et_def.desc (needs grpcio-tools, a dev dependency).

    python scripts/generate_chakra_schema.py            # rewrite et_def.desc
    python scripts/generate_chakra_schema.py --check    # exit 1 when the checked-in et_def.desc is stale

et_def.desc is the schema compiled by protoc: a serialized `FileDescriptorSet`, which
`ddlsim.chakra.schema` loads into a descriptor pool of its own at import. It is checked in so that
installing ddlsim needs no protobuf compiler, and it is a descriptor rather than a generated
``_pb2`` module because a descriptor works with every protobuf runtime from 4.22 on, while a
generated module only works with runtimes at least as new as the compiler that wrote it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = Path("ddlsim/chakra/et_def.proto")  # compiled from the root: registered under this name
DESCRIPTOR = ROOT / PROTO.with_suffix(".desc")


def compile_proto(out: Path) -> bytes:
    """The FileDescriptorSet protoc makes of the proto, as bytes."""
    from grpc_tools import protoc

    status = protoc.main(["grpc_tools.protoc", f"-I{ROOT}", f"--descriptor_set_out={out}", str(PROTO)])
    if status != 0:
        raise SystemExit(f"protoc failed on {PROTO} (exit {status})")
    return out.read_bytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the checked-in descriptor, write nothing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        compiled = compile_proto(Path(scratch) / "et_def.desc")
    if args.check:
        from google.protobuf.descriptor_pb2 import FileDescriptorSet

        current = DESCRIPTOR.read_bytes() if DESCRIPTOR.exists() else b""
        if FileDescriptorSet.FromString(current) != FileDescriptorSet.FromString(compiled):
            print(f"{DESCRIPTOR.relative_to(ROOT)} is stale: run python scripts/generate_chakra_schema.py",
                  file=sys.stderr)
            return 1
        print(f"{DESCRIPTOR.relative_to(ROOT)} matches {PROTO}")
        return 0
    DESCRIPTOR.write_bytes(compiled)
    print(f"wrote {DESCRIPTOR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
