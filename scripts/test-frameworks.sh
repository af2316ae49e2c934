#!/usr/bin/env bash
# The real-framework tier (tests/trainer/frameworks), apart from the main test command:
# TRL 1.16 and veRL 0.9.1 each in its own venv (scripts/trainer-venvs.sh; their transformers
# pins conflict), each test file run by its framework's python against a gateway process;
# NeMo-Gym 0.4.0 in .venv-nemo (Python >= 3.12, scripts/nemo-venv.sh; skipped, saying so, without one).
# Arguments go to every pytest run (e.g. -x, -k outage).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev,ray,eval,rm  # the gateway's code and test helpers come from the repo

start=$SECONDS
# The two installs are mostly downloads and unpacking: side by side they take the longer one's time.
scripts/trainer-venvs.sh trl >/tmp/arbiter-venv-trl.log 2>&1 &
trl_pid=$!
scripts/trainer-venvs.sh verl >/tmp/arbiter-venv-verl.log 2>&1 &
verl_pid=$!
scripts/nemo-venv.sh >/tmp/arbiter-venv-nemo.log 2>&1 &
nemo_pid=$!
status=0
nemo_status=0
wait "$trl_pid" || { echo "TRL venv failed:" >&2; tail -n 40 /tmp/arbiter-venv-trl.log >&2; status=1; }
wait "$verl_pid" || { echo "veRL venv failed:" >&2; tail -n 40 /tmp/arbiter-venv-verl.log >&2; status=1; }
wait "$nemo_pid" || nemo_status=$?
if [ "$nemo_status" = 3 ]; then
  echo "NeMo-Gym tier skipped: $(tail -n 1 /tmp/arbiter-venv-nemo.log)" >&2
elif [ "$nemo_status" != 0 ]; then
  echo "NeMo-Gym venv failed:" >&2; tail -n 40 /tmp/arbiter-venv-nemo.log >&2; status=1
fi
[ "$status" = 0 ] || exit 1
echo "framework venvs ready in $((SECONDS - start)) s"

export ARBITER_FRAMEWORK_TESTS=1
start=$SECONDS
.venv-trl/bin/python -m pytest -p no:cacheprovider tests/trainer/frameworks/test_trl.py tests/trainer/frameworks/test_trl_environment.py "$@"
echo "TRL tier: $((SECONDS - start)) s"
start=$SECONDS
.venv-verl/bin/python -m pytest -p no:cacheprovider tests/trainer/frameworks/test_verl.py tests/trainer/frameworks/test_verl_sandbox.py \
  tests/trainer/frameworks/test_verl_tools.py "$@"
echo "veRL tier: $((SECONDS - start)) s"
if [ "$nemo_status" = 0 ]; then
  start=$SECONDS
  .venv-nemo/bin/python -m pytest -p no:cacheprovider tests/trainer/frameworks/test_nemo_gym.py "$@"
  echo "NeMo-Gym tier: $((SECONDS - start)) s"
fi
