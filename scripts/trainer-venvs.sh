#!/usr/bin/env bash
# Create (or refresh) the real trainer frameworks' venvs that tests/trainer/frameworks drives:
#   scripts/trainer-venvs.sh [trl] [verl]      (default: both)
# Each framework gets its own venv because their pins conflict (veRL 0.9.1 needs
# transformers < 5.11, TRL 1.16 pulls 5.24). torch==2.13.0 goes in first, alone: that takes the
# CPU wheel lying on this machine's disk; an unpinned torch would pull a multi-GB CUDA build.
# The adapters (client/: the arbiter-client distribution a trainer installs), Arbiter's services
# (base dependencies only: the tests start a gateway from them) and pytest join each venv, so the
# tests run inside it.
# A stamp makes a second run with the same pins a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

TORCH="torch==2.13.0"
TESTING=("pytest>=8.3,<10" "pytest-asyncio>=0.24,<2" "pytest-timeout>=2.3,<3")
declare -A PINS=(
  [trl]="trl==1.16.* datasets"
  # veRL 0.9.1 installs with its own pins on CPU (no vLLM or CUDA packages); transformers < 5.11.
  # cachetools: its agent loop (rollout router) imports it but veRL does not declare it.
  [verl]="verl==0.9.1 transformers<5.11 cachetools"
)

make_venv() {
  local name="$1" dir=".venv-$1"
  local want
  want="$(printf '%s\n' "$TORCH" "${PINS[$name]}" "${TESTING[@]}" | cat - pyproject.toml client/pyproject.toml | sha256sum | cut -c1-16)"
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$want" ]; then
    echo "$dir: up to date"
    return
  fi
  echo "$dir: installing $TORCH, ${PINS[$name]}" >&2
  [ -x "$dir/bin/python" ] || "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet "$TORCH"
  # shellcheck disable=SC2086  # PINS entries are word lists on purpose
  "$dir/bin/python" -m pip install --quiet "$TORCH" ${PINS[$name]} "${TESTING[@]}"
  # The client and Arbiter's base dependencies, without touching what the framework pinned.
  "$dir/bin/python" -m pip install --quiet "$TORCH" -e ./client -e .
  "$dir/bin/python" -m pip check >&2 || echo "$dir: pip check reports conflicts (above)" >&2
  echo "$want" >"$dir/.stamp"
}

names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(trl verl)
for name in "${names[@]}"; do
  [ -n "${PINS[$name]:-}" ] || { echo "unknown framework $name (trl, verl)" >&2; exit 2; }
  make_venv "$name"
done
