"""`python -m services.reward_rules` in a child process on a free loopback port, for the tests and
benches that drive its own HTTP routes (SandboxFusion's `/run_code`) with a client of their own."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from testkit.procs import ServiceProcess, free_port


def reward_rules_env(http_port: int, settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its ARBITER_ variables, plus reward_rules on
    127.0.0.1:`http_port` (no gRPC, warnings only) and `settings` (full ARBITER_... names)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBITER_")}
    env.update(
        {
            "ARBITER_REWARD_RULES__HOST": "127.0.0.1",
            "ARBITER_REWARD_RULES__HTTP_PORT": str(http_port),
            "ARBITER_REWARD_RULES__GRPC_PORT": "-1",
            "ARBITER_LOG__LEVEL": "WARNING",
        }
    )
    env.update(settings or {})
    return env


@contextmanager
def reward_rules_service(settings: Mapping[str, str] | None = None, python: str = "") -> Iterator[str]:
    """Starts reward_rules (`python`: the interpreter; this one by default), waits until it is
    ready, yields its base URL (`http://127.0.0.1:PORT`), stops it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [python or sys.executable, "-m", "services.reward_rules"]
    with ServiceProcess(argv, f"{url}/readyz", env=reward_rules_env(port, settings), start_timeout_s=120):
        yield url
