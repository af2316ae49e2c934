"""Real served graders on loopback, each in its own event-loop thread.

Hypothesis and schemathesis drive synchronous tests; a server on the test's own loop
would deadlock against a blocking client, so every server here runs on a private loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from services.catalog import make_server
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.helpers import free_port, rules_grader, server_settings

# Small limits, so that huge bodies and long sample lists reach them quickly.
MAX_BODY_BYTES = 256 * 1024
MAX_SAMPLES = 64
LIMITS: dict[str, int] = {"max_body_bytes": MAX_BODY_BYTES, "max_samples_per_request": MAX_SAMPLES}


@dataclass(frozen=True)
class Served:
    name: str
    http_url: str
    grpc_target: str


@contextmanager
def serve_in_thread(name: str, build: Callable[[], GraderServer]) -> Iterator[Served]:
    """Build and start a GraderServer on a fresh loop in a daemon thread; stop it on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=f"served-{name}", daemon=True)
    thread.start()

    async def start() -> GraderServer:
        server = build()
        await server.start()
        return server

    server = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=60)
    try:
        yield Served(name, server.http_url, server.grpc_target)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def rules_server() -> GraderServer:
    """The rules grader from tests/helpers.py."""
    settings = server_settings(**LIMITS)
    return GraderServer("reward_rules", rules_grader(), settings)


def gateway_server() -> GraderServer:
    """The gateway as `arbiter serve` builds it (graders in process), on free ports."""
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {"http_port": 0, "grpc_port": 0, "deadline_s": 10, **LIMITS},
            "reward_rules": {"math": {"workers": 1}},
        }
    )
    return make_server("gateway", settings)


def judge_server() -> GraderServer:
    """The judge proxy with an upstream that refuses connections: every sample is a fallback."""
    settings = ArbiterSettings.model_validate(
        {
            "judge_proxy": {
                "http_port": 0,
                "grpc_port": 0,
                "deadline_s": 5,
                "upstreams": [{"base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "judge"}],
                "retry": {"max_attempts": 1, "backoff_base_s": 0},
            }
        }
    )
    return make_server("judge_proxy", settings)


SERVERS: dict[str, Callable[[], GraderServer]] = {
    "reward_rules": rules_server,
    "gateway": gateway_server,
    "judge_proxy": judge_server,
}
