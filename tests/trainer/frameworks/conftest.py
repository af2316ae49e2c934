"""The real-framework tier: TRL, veRL and OpenRLHF's own code, each run inside its own venv.

`scripts/test-frameworks.sh` creates the venvs (scripts/trainer-venvs.sh) and runs each test
file with its framework's python; the main test command (.venv) skips this directory,
where those frameworks are not installed. The gateway runs as its own process, the way a
trainer meets it, on free loopback ports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ServiceProcess, free_port
from tests.trainer.frameworks.running import RunningGateway

# Only the gateway's own settings: a trainer-side ARBITER_GATEWAY would read as its section.
_TRAINER_VARS = ("ARBITER_GATEWAY", "ARBITER_GATEWAY_TIMEOUT_S", "ARBITER_GATEWAY_WAIT_S", "ARBITER_LOG_KEYS")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[RunningGateway]:
    """`python -m services.gateway` on embedded defaults (what ./scripts/serve.sh serves)."""
    http, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in _TRAINER_VARS}
    env.update(
        {
            "ARBITER_GATEWAY__HOST": "127.0.0.1",
            "ARBITER_GATEWAY__HTTP_PORT": str(http),
            "ARBITER_GATEWAY__GRPC_PORT": str(grpc),
            "ARBITER_LOG__LEVEL": "WARNING",
        }
    )
    url = f"http://127.0.0.1:{http}"
    process = ServiceProcess(
        [sys.executable, "-m", "services.gateway"], f"{url}/readyz", env=env, start_timeout_s=120
    )
    with process:
        yield RunningGateway(process, f"127.0.0.1:{grpc}", url)
