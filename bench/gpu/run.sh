#!/usr/bin/env bash
# The device command (device tool `run`, carry [".whl"], timeout_s 600):
#   bash bench/gpu/run.sh
# installs the carried wheels (bench/gpu/wheels.sh made them here) into /tmp/site, then runs
# the RM check with its log and figures under $OUT. Extra arguments go to rm_gpu.py.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-bench-gpu-out}"
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
python3 bench/gpu/rm_gpu.py --out "$out" "$@" 2>&1 | tee "$out/log.txt"
exit "${PIPESTATUS[0]}"
