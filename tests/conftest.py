"""Shared fixtures (real servers on loopback: uvicorn + grpc.aio, redis-server) and test tiers.

Tiers are markers set by path (and by fixture, for Redis), so a new test file lands in its tier
without decorating it: `pytest -m "not slow"` is the fast loop, CI runs everything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from services.transports.server import GraderServer
from testkit.procs import start_redis
from tests.helpers import free_port, rules_grader, server_settings

ROOT = Path(__file__).resolve().parent.parent

# Path prefixes (from the repo root) and the markers their tests carry.
PATH_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tests/reward_rules/test_code_", ("sandbox",)),
    ("tests/episodes/", ("sandbox",)),
    ("tests/trainer/frameworks/", ("frameworks", "slow")),
    ("tests/evaluate/test_report_browser.py", ("browser",)),
    ("tests/deploy/test_compose.py", ("slow",)),
    ("tests/deploy/test_ray", ("slow",)),
    ("tests/evaluate/test_ray.py", ("slow",)),
    ("tests/reward_rm/test_vllm_server.py", ("slow",)),
    ("tests/reliability/test_load.py", ("slow",)),
    ("tests/reliability/test_fuzz_", ("slow",)),
    ("tests/gateway/test_faults.py", ("slow",)),
    ("tests/gateway/test_burst.py", ("slow",)),
    ("tests/test_workers.py", ("slow",)),
    ("tests/test_shutdown.py", ("slow",)),
    ("tests/reward_rules/test_math_generated.py", ("slow",)),
    ("tests/reward_rules/test_code_humaneval.py", ("slow",)),
    ("tests/trainer/test_openrlhf_client.py", ("slow",)),
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(item.path).resolve().relative_to(ROOT).as_posix()
        for prefix, names in PATH_MARKERS:
            if path.startswith(prefix):
                for name in names:
                    item.add_marker(name)
        if "redis_url" in getattr(item, "fixturenames", ()):
            item.add_marker("redis")


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
