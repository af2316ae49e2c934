"""Shared fixtures: real servers on loopback (uvicorn + grpc.aio, redis-server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from services.common.server import GraderServer
from testkit.procs import start_redis
from tests.helpers import free_port, rules_grader, server_settings


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port (CI installs it; it is never skipped)."""
    port = free_port()
    try:
        proc = start_redis(port, tmp_path_factory.mktemp("redis"))
    except RuntimeError as exc:
        pytest.fail(f"{exc} (.ci/run installs redis-server)")
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
async def rules_server() -> AsyncIterator[GraderServer]:
    async with GraderServer("reward_rules", rules_grader(), server_settings()) as server:
        yield server


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
