#!/usr/bin/env bash
# The main job on embedded defaults: every service in one process, memory cache, CPU.
# Arguments go to `arbiter serve` (e.g. a service name, --config FILE, --host 0.0.0.0).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh ""
exec .venv/bin/arbiter serve "$@"
