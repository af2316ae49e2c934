"""The real-framework tier: TRL, veRL and OpenRLHF's own code, each run inside its own venv.

`scripts/test-frameworks.sh` creates the venvs (scripts/trainer-venvs.sh) and runs each test
file with its framework's python; the main test command (.venv) skips this directory,
where those frameworks are not installed. The gateway runs as its own process, the way a
trainer meets it, on free loopback ports.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import free_port
from tests.trainer.frameworks.running import RunningGateway, gateway_process


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[RunningGateway]:
    """`python -m services.gateway` on embedded defaults (what ./scripts/serve.sh serves)."""
    http, grpc = free_port(), free_port()
    with gateway_process(http, grpc) as process:
        yield RunningGateway(process, f"127.0.0.1:{grpc}", f"http://127.0.0.1:{http}")
