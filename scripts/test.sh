#!/usr/bin/env bash
# The test suite, as CI runs it. Installs what it needs: system packages (redis-server for the
# cache tests, bubblewrap for the code sandbox, g++ for C++ code labels, golang-go, rustc,
# default-jdk-headless and nodejs for the other languages, chromium for the report screenshot)
# when missing, and .venv with the dev, ray, eval and rm (CPU torch) extras.
# Arguments go to pytest (e.g. -k cache, -x).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v chromium >/dev/null || need+=(chromium)
command -v g++ >/dev/null || need+=(g++)
# the code grader's other languages (services/reward_rules/code/languages.py): Debian's toolchains,
# looked up under /usr/bin as the sandbox sees it (a rustup or nvm install elsewhere does not count)
[ -x /usr/bin/go ] || need+=(golang-go)
[ -x /usr/bin/rustc ] || need+=(rustc)
[ -x /usr/bin/javac ] || need+=(default-jdk-headless)
[ -x /usr/bin/node ] || need+=(nodejs)
if [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing system packages: ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
scripts/bootstrap.sh dev,ray,eval,rm
exec .venv/bin/python -m pytest "$@"
