"""A gateway process the framework tests drive, with the addresses a trainer is given."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from tests.helpers import ServiceProcess

# Only the gateway's own settings reach it: a trainer-side ARBITER_GATEWAY would read as its
# section, and the episode adapters' variables are the trainer's.
TRAINER_VARS = (
    "ARBITER_GATEWAY",
    "ARBITER_GATEWAY_TIMEOUT_S",
    "ARBITER_GATEWAY_WAIT_S",
    "ARBITER_LOG_KEYS",
    "ARBITER_EPISODES",
    "ARBITER_EPISODE_ENV",
    "ARBITER_EPISODE_MAX_TURNS",
)


@dataclass
class RunningGateway:
    process: ServiceProcess
    grpc_target: str
    http_url: str


def gateway_process(http: int, grpc: int, **settings: str) -> ServiceProcess:
    """`python -m services.gateway` on loopback ports, on embedded defaults plus `settings`
    (ARBITER_* variables), not yet started."""
    env = {k: v for k, v in os.environ.items() if k not in TRAINER_VARS}
    env.update(
        {
            "ARBITER_GATEWAY__HOST": "127.0.0.1",
            "ARBITER_GATEWAY__HTTP_PORT": str(http),
            "ARBITER_GATEWAY__GRPC_PORT": str(grpc),
            "ARBITER_LOG__LEVEL": "WARNING",
            **settings,
        }
    )
    return ServiceProcess(
        [sys.executable, "-m", "services.gateway"],
        f"http://127.0.0.1:{http}/readyz",
        env=env,
        start_timeout_s=120,
    )
