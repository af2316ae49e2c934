"""Module-scoped served graders: hypothesis runs many examples against one live server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.reliability.served import SERVERS, Served, serve_in_thread


@pytest.fixture(scope="module", params=["reward_rules", "gateway"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The rules grader and the gateway (graders in process), each a real HTTP + gRPC server."""
    with serve_in_thread(request.param, SERVERS[request.param]) as server:
        yield server
