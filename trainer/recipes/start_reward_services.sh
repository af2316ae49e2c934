#!/usr/bin/env bash
# Start Arbiter's reward services before the trainer, and check them with a probe sample.
#   trainer/recipes/start_reward_services.sh trainer/recipes/configs/math.yaml
# The gateway then answers OpenRLHF at http://HOST:8100/get_reward (HTTP) and HOST:9100 (gRPC).
set -euo pipefail
config="${1:?usage: start_reward_services.sh CONFIG.yaml}"
host="${ARBITER_HOST:-0.0.0.0}"
log="${ARBITER_LOG:-arbiter-serve.log}"

# Every service in one process on this node (graders in-process behind the gateway).
# For scale, start each service on its own nodes instead (python -m services.<name>) and list
# their replicas under gateway.services in the config.
arbiter serve --config "$config" --host "$host" >"$log" 2>&1 &
echo "arbiter serve: pid $! (log: $log)"

for _ in $(seq 1 120); do
  if curl -fs "http://127.0.0.1:8100/readyz" >/dev/null; then break; fi
  sleep 1
done
# A probe through the same endpoint OpenRLHF will use: prints reward, latency and extra_logs,
# exits non-zero if anything is off (so the training script below never starts on a broken reward).
arbiter check "http://127.0.0.1:8100/get_reward" \
  --prompt "What is 6*7?" --response "<think>6*7=42</think> \\boxed{42}" --label "42"
