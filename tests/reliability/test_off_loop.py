"""CPU work on a large sample runs off the event loop (issue 15 item 3).

A 30 MB body was parsed, scanned and graded on the loop that serves everyone: /healthz and
every other client waited seconds. A large body is now parsed, its emergence statistics
computed and its format graded in the kit's CPU threads; small ones stay inline (cheaper).
The check records which thread ran the work rather than timing anything.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import services.common.http_app as http_app
from services.common.emergence import EmergenceStats
from services.common.offload import LARGE
from services.common.server import GraderServer
from services.reward_rules.format_rules import FormatGrader
from tests.helpers import rules_grader, server_settings


def _spy(threads: dict[str, list[str]], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        threads.setdefault(name, []).append(threading.current_thread().name)
        return function(*args, **kwargs)

    return run


async def test_large_samples_are_parsed_scanned_and_graded_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: dict[str, list[str]] = {}
    monkeypatch.setattr(http_app, "_parse_openrlhf", _spy(threads, "parse", http_app._parse_openrlhf))
    monkeypatch.setattr(EmergenceStats, "compute", _spy(threads, "emergence", EmergenceStats.compute))
    monkeypatch.setattr(FormatGrader, "grade", _spy(threads, "grade", FormatGrader.grade))
    server = GraderServer("rules", rules_grader(), server_settings(grpc_port=-1))
    await server.start()
    try:
        label = json.dumps({"grader": "format"})
        async with httpx.AsyncClient(base_url=server.http_url, timeout=60) as http:
            big = "<think>" + "wait, let me check. " * (LARGE // 8) + "</think> 4"
            small = "<think>a</think> 4"
            for response in (big, small):
                reply = await http.post("/get_reward", json={"query": [response], "labels": [label]})
                assert reply.status_code == 200 and len(reply.json()["rewards"]) == 1
    finally:
        await server.stop()
    loop_thread = threading.main_thread().name
    for work in ("parse", "emergence", "grade"):
        large, small_run = threads[work]
        assert large.startswith("arbiter-cpu"), (work, large)
        assert small_run == loop_thread, (work, small_run)
