#!/usr/bin/env bash
# Fetch, here, the wheels the lent GPU machine lacks for `arbiter serve reward_rm` (its image has
# torch, transformers, tokenizers, safetensors, httpx, aiohttp, uvloop, typer, rich, yaml, sympy,
# regex, prometheus-client: /work/.library/device/KINDS.md). Pinned to what .venv runs here;
# CPython 3.12, x86-64. About 11 MiB in all (the device tool carries 64 MiB): name `.whl` in the
# run's `carry`; bench/gpu/run.sh installs them into /tmp/site there.
#   grpcio and protobuf travel too: the committed gencode checks their versions at import;
#   opentelemetry-api: fastapi imports it.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
names=(fastapi starlette uvicorn httptools pydantic pydantic-core pydantic-settings annotated-types
  typing-inspection typing-extensions python-dotenv orjson protobuf grpcio grpcio-health-checking
  grpcio-reflection opentelemetry-api)
pins=()
for name in "${names[@]}"; do
  version="$(.venv/bin/python -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p')"
  [ -n "$version" ] || { echo "$name is not installed in .venv" >&2; exit 1; }
  pins+=("$name==$version")
done
rm -rf .whl && mkdir -p .whl
platforms=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64 \
  manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 manylinux_2_39_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .whl "${pins[@]}"
du -sh .whl
