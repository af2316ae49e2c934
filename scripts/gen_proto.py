"""Regenerate the committed gRPC code from proto/ (run: python scripts/gen_proto.py).

The generated package `arbiter.v1` mirrors the protobuf package name, so the
generated imports (`from arbiter.v1 import reward_pb2`) work without rewriting. It lives in
the arbiter-client distribution: client/arbiter/v1 (PACKAGE_ROOT).
tests/test_proto_drift.py regenerates into a temp dir and fails on any difference.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_ROOT = ROOT / "client"  # where the `arbiter` package lies
PROTOS = ["arbiter/v1/reward.proto"]
GENERATED = ["reward_pb2.py", "reward_pb2.pyi", "reward_pb2_grpc.py"]


def generate(out_dir: Path) -> list[Path]:
    """Run protoc (grpcio-tools) into out_dir; return the generated files."""
    from grpc_tools import protoc  # dev-only dependency

    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *PROTOS,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")
    return [out_dir / "arbiter" / "v1" / name for name in GENERATED]


def main() -> int:
    for path in generate(PACKAGE_ROOT):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
