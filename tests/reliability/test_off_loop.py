"""CPU work on a large sample runs off the event loop.

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

import services.transports.http_app as http_app
from services.common.offload import LARGE
from services.reward_rules.format_rules import FormatGrader
from services.textstats.emergence import EmergenceStats
from services.transports.server import GraderServer
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


async def test_a_large_request_of_small_samples_leaves_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a red team: 4,000 samples of 7 KB (28 MB) were each under LARGE, so their parsing,
    validation, emergence, grading and reply all ran on the loop (/healthz waited 11 s). The
    decision is now made by the request's (or batch's) size."""
    import grpc

    import services.transports.grpc_app as grpc_server
    from arbiter.v1 import reward_pb2 as pb

    threads: dict[str, list[str]] = {}
    monkeypatch.setattr(
        http_app, "_parse_score_request", _spy(threads, "parse", http_app._parse_score_request)
    )
    monkeypatch.setattr(
        grpc_server, "parse_score_request", _spy(threads, "grpc_parse", grpc_server.parse_score_request)
    )
    monkeypatch.setattr(
        grpc_server, "_samples_from_pb", _spy(threads, "convert", grpc_server._samples_from_pb)
    )
    monkeypatch.setattr(EmergenceStats, "compute", _spy(threads, "emergence", EmergenceStats.compute))
    # (A batch of the grader is decided by its own size: the batcher cuts this request in small ones.)
    server = GraderServer("rules", rules_grader(), server_settings(grpc_port=0, max_samples_per_request=256))
    await server.start()
    label = json.dumps({"grader": "format"})
    each = "<think>" + "wait, let me check. " * 20 + "</think> 4"  # 400 characters: small alone
    count = LARGE // len(each) + 8  # together over LARGE
    try:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=60) as http:
            samples = [{"prompt": f"Q{i}", "response": each, "label": label} for i in range(count)]
            reply = await http.post("/v1/score", json={"samples": samples})
            assert reply.status_code == 200, reply.text
            assert [r["status"] for r in reply.json()["results"]] == ["OK"] * count
            bad = await http.post("/v1/score", json={"samples": [*samples, {"response": 3}]})
            assert bad.status_code == 422 and f"samples.{count}.response" in bad.text, bad.text
        async with grpc.aio.insecure_channel(server.grpc_target) as channel:
            request = pb.ScoreRequest(
                samples=[pb.Sample(prompt=f"Q{i}", response=each, label=label) for i in range(count)]
            )
            score = channel.unary_unary(
                "/arbiter.v1.RewardService/Score",
                request_serializer=pb.ScoreRequest.SerializeToString,
                response_deserializer=pb.ScoreResponse.FromString,
            )
            answer = await score(request, timeout=60)
            assert len(answer.results) == count
    finally:
        await server.stop()
    for work in ("parse", "grpc_parse", "convert", "emergence"):
        assert threads[work], work
        assert all(name.startswith("arbiter-cpu") for name in threads[work]), (work, set(threads[work]))


async def test_a_large_batch_of_small_samples_is_graded_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from arbiter.contract import Sample

    threads: dict[str, list[str]] = {}
    monkeypatch.setattr(FormatGrader, "grade", _spy(threads, "grade", FormatGrader.grade))
    each = "<think>" + "wait, let me check. " * 20 + "</think> 4"
    results = await FormatGrader().score([Sample(response=each)] * (LARGE // len(each) + 8))
    assert all(r.reward == 1.0 for r in results)
    assert all(name.startswith("arbiter-cpu") for name in threads["grade"]), set(threads["grade"])


async def test_a_large_sample_does_not_queue_behind_huge_ones() -> None:
    """Two 12 MB samples in the pool made an honest 85 KB sample wait 5.5 s (red team, stall2)."""
    import asyncio

    from services.common.offload import HUGE, WORKERS, maybe_off_loop

    release = threading.Event()
    huge = [asyncio.ensure_future(maybe_off_loop(HUGE, release.wait, 30)) for _ in range(WORKERS)]
    try:
        assert await asyncio.wait_for(maybe_off_loop(LARGE, str.upper, "done"), 10) == "DONE"
    finally:
        release.set()
        await asyncio.gather(*huge)
