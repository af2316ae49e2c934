#!/usr/bin/env bash
# Create or refresh .venv at the repo root with the given extras ("" for the base install).
# Idempotent and quick when nothing changed: a stamp records what was installed from which pyproject.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Arbiter needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
want="$(cat pyproject.toml client/pyproject.toml scripts/test-peers.txt | sha256sum | cut -c1-16) ${extras}"
stamp=.venv/.arbiter-installed
if [ -f "$stamp" ]; then
  have="$(cat "$stamp")"
  # Up to date when the same pyproject was installed with at least these extras.
  if [ "${have%% *}" = "${want%% *}" ]; then
    missing=0
    for extra in ${extras//,/ }; do
      case ",${have#* }," in *",$extra,"*) ;; *) missing=1 ;; esac
    done
    [ "$missing" = 0 ] && exit 0
    extras="$(printf '%s\n' ${have#* } ${extras//,/ } | tr ',' '\n' | sort -u | paste -sd, -)"
    want="${want%% *} ${extras}"
  fi
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The services (.) and the contract they import (client/: the arbiter-client distribution).
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install --quiet -e ./client -e ".[${extras}]"
else
  .venv/bin/python -m pip install --quiet -e ./client -e .
fi
case ",$extras," in
  *,dev,*) grep -v '^#' scripts/test-peers.txt | xargs .venv/bin/python -m pip install --quiet --no-deps ;;
esac
echo "$want" > "$stamp"
