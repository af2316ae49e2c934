#!/usr/bin/env bash
# Create (or refresh) .venv-nemo: NeMo-Gym 0.4.0, which tests/trainer/frameworks/test_nemo_gym.py
# drives against Arbiter. NeMo-Gym needs Python >= 3.12 (the main venv is 3.11), hence a venv of
# its own. Its full install (ray, mlflow, wandb, datasets...) is taken as a NeMo-Gym user gets it:
# 1.5 GB; 8-9 minutes on the shared 2-core machine (most of it resolving and unpacking).
# Arbiter itself (base dependencies only) and pytest join it, so the test runs inside it.
#   NEMO_PYTHON=/path/to/python3.12 scripts/nemo-venv.sh
# Exit status 3: no Python >= 3.12 here (the caller skips the tier and says so).
# A stamp makes a second run with the same pins a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
dir=.venv-nemo

PIN="nemo-gym==0.4.0"
TESTING=("pytest>=8.3,<10" "pytest-asyncio>=0.24,<2" "pytest-timeout>=2.3,<3")

is_312() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }

python="${NEMO_PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in /root/.pyenv/versions/3.12.1/bin/python3.12 python3.12 python3.13 python3.14 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && is_312 "$candidate"; then
      python="$candidate"
      break
    fi
  done
fi
if [ -z "$python" ] || ! is_312 "$python"; then
  echo "$dir: no Python >= 3.12 found (NeMo-Gym requires it); set NEMO_PYTHON" >&2
  exit 3
fi

want="$(printf '%s\n' "$python" "$PIN" "${TESTING[@]}" | cat - pyproject.toml client/pyproject.toml | sha256sum | cut -c1-16)"
if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$want" ]; then
  echo "$dir: up to date"
  exit 0
fi
echo "$dir: installing $PIN with $python" >&2
[ -x "$dir/bin/python" ] || "$python" -m venv "$dir"
"$dir/bin/python" -m pip install --quiet "$PIN" "${TESTING[@]}"
# The contract (client/) and Arbiter's base dependencies, without touching what NeMo-Gym pinned.
"$dir/bin/python" -m pip install --quiet "$PIN" -e ./client -e .
"$dir/bin/python" -m pip check >&2 || echo "$dir: pip check reports conflicts (above)" >&2
echo "$want" >"$dir/.stamp"
