"""The scoring pipeline: every sample gets a finite result in time, whatever the grader does."""

from __future__ import annotations

import asyncio
import time

from arbiter.contract import Result, Sample, Status
from services.common.settings import BatchSettings
from services.scoring.cache import MemoryCache
from services.scoring.engine import ScoringEngine
from tests.helpers import ScriptedGrader, WatchedGrader, server_settings


async def make_engine(grader: ScriptedGrader, **overrides: object) -> ScoringEngine:
    engine = ScoringEngine(grader, server_settings(**overrides), cache=MemoryCache(1000))
    await engine.start()
    return engine


async def test_a_poisoned_sample_is_isolated_from_its_batch() -> None:
    grader = ScriptedGrader()
    engine = await make_engine(grader, fallback_reward=-0.5)
    results = await engine.score([Sample(response=r) for r in ["ab", "raise", "abcd"]])
    await engine.stop()
    assert [r.status for r in results] == [Status.OK, Status.GRADER_ERROR, Status.OK]
    assert [r.reward for r in results] == [2.0, -0.5, 4.0]
    assert results[1].detail == "RuntimeError: scripted failure"
    assert results[1].logs["status/grader_error"] == 1.0 and results[0].logs["status/ok"] == 1.0


async def test_a_hanging_grader_times_out_with_the_fallback() -> None:
    engine = await make_engine(ScriptedGrader(), deadline_s=0.5, fallback_reward=-1.0)
    started = time.monotonic()
    results = await engine.score([Sample(response="hang"), Sample(response="ok")])
    elapsed = time.monotonic() - started
    await engine.stop()
    # Both share the hung batch: both time out, with the fallback and a flag; nobody waits forever.
    assert [r.status for r in results] == [Status.TIMEOUT, Status.TIMEOUT]
    assert all(r.reward == -1.0 and r.logs["status/timeout"] == 1.0 for r in results)
    assert "0.5s deadline" in results[0].detail
    assert elapsed < 10


async def test_request_timeout_is_capped_by_the_server_deadline() -> None:
    engine = await make_engine(ScriptedGrader(), deadline_s=0.3)
    results = await engine.score([Sample(response="slow:5")], timeout_s=100)
    await engine.stop()
    assert results[0].status is Status.TIMEOUT


async def test_results_are_cached_and_flagged() -> None:
    grader = ScriptedGrader()
    engine = await make_engine(grader)
    first = await engine.score([Sample(response="abc")])
    second = await engine.score([Sample(response="abc")])
    await asyncio.sleep(0.05)  # the cache write runs in the background
    third = await engine.score([Sample(response="abc")])
    await engine.stop()
    assert first[0].reward == second[0].reward == third[0].reward == 3.0
    assert first[0].logs["cache/hit"] == 0.0 and third[0].logs["cache/hit"] == 1.0
    assert sum(grader.batches) <= 2


async def test_failures_are_not_cached() -> None:
    grader = ScriptedGrader()
    engine = await make_engine(grader)
    for _ in range(2):
        assert (await engine.score([Sample(response="raise")]))[0].status is Status.GRADER_ERROR
        await asyncio.sleep(0.02)
    await engine.stop()
    assert len(grader.batches) == 2


async def test_identical_samples_in_flight_are_graded_once() -> None:
    grader = ScriptedGrader(batch_delay_s=0.1)
    engine = await make_engine(grader)
    sample = Sample(prompt="p", response="same", label="l")
    results = await asyncio.gather(*(engine.score([sample]) for _ in range(50)))
    await engine.stop()
    assert all(r[0].reward == 4.0 for r in results)
    assert sum(grader.batches) == 1


async def test_full_queue_answers_overloaded_at_once() -> None:
    grader = ScriptedGrader(batch_delay_s=0.3)
    engine = ScoringEngine(
        grader,
        server_settings(batch=BatchSettings(max_queue=5, max_batch_size=1, max_concurrent_batches=1)),
    )
    await engine.start()
    results = await engine.score([Sample(response=f"s{i}") for i in range(20)])
    await engine.stop()
    statuses = [r.status for r in results]
    assert Status.OVERLOADED in statuses and Status.OK in statuses
    overloaded = next(r for r in results if r.status is Status.OVERLOADED)
    assert "queue full" in overloaded.detail and overloaded.logs["status/overloaded"] == 1.0


async def test_every_result_carries_every_log_key() -> None:
    engine = await make_engine(ScriptedGrader())
    results = await engine.score([Sample(response="abc"), Sample(response="raise")])
    await engine.stop()
    for result in results:
        assert set(engine.log_keys) <= set(result.logs)
    assert results[1].logs["scripted/len"] == 0.0  # a failed sample still has the grader's keys


async def test_a_nondeterministic_grader_is_never_cached_or_shared() -> None:
    from arbiter.contract import GraderInfo

    class Sampled(ScriptedGrader):
        @property
        def info(self) -> GraderInfo:
            return GraderInfo(name="sampled", version="1", config_hash="t", capabilities=["nondeterministic"])

    grader = Sampled(batch_delay_s=0.05)
    engine = await make_engine(grader)
    same = Sample(response="same")
    await asyncio.gather(*(engine.score([same]) for _ in range(5)))
    await asyncio.sleep(0.05)
    again = await engine.score([same])
    await engine.stop()
    assert sum(grader.batches) == 6 and again[0].logs["cache/hit"] == 0.0


async def test_a_graders_own_metrics_are_served_with_the_kits() -> None:
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    class Measured(ScriptedGrader):
        def __init__(self) -> None:
            super().__init__()
            self.metrics_registry = CollectorRegistry()
            self.calls = Counter("scripted_upstream_calls", "calls", registry=self.metrics_registry)

    grader = Measured()
    grader.calls.inc(3)
    engine = await make_engine(grader)
    await engine.stop()
    text = generate_latest(engine.metrics.registry).decode()
    assert "scripted_upstream_calls_total 3.0" in text and "arbiter_samples_total" in text


async def test_v1_score_says_429_when_everything_was_shed() -> None:
    import httpx

    from services.transports.server import GraderServer

    settings = server_settings(batch=BatchSettings(max_queue=1, max_batch_size=1, max_concurrent_batches=1))
    async with (
        GraderServer("scripted", ScriptedGrader(batch_delay_s=0.5), settings) as server,
        httpx.AsyncClient(base_url=server.http_url) as http,
    ):
        running = asyncio.create_task(http.post("/v1/score", json={"samples": [{"response": "a"}]}))
        await asyncio.sleep(0.1)  # "a" is being graded
        waiting = asyncio.create_task(http.post("/v1/score", json={"samples": [{"response": "b"}]}))
        await asyncio.sleep(0.1)  # "b" fills the queue
        shed = await http.post("/v1/score", json={"samples": [{"response": "c"}]})
        openrlhf = await http.post("/get_reward", json={"query": ["d"], "prompts": [""], "labels": [""]})
        assert (await running).status_code == (await waiting).status_code == 200
    assert shed.status_code == 429 and shed.headers["retry-after"] == "1"
    assert shed.json()["results"][0]["status"] == "OVERLOADED"
    assert openrlhf.status_code == 200 and openrlhf.json()["extra_logs"]["status/overloaded"] == [1.0]


async def test_a_joiner_with_a_later_deadline_gets_its_own_time() -> None:
    # Caller A (0.2 s) submits a sample that takes 0.6 s; B (5 s) joins the flight 50 ms later. The
    # shared work ends at A's deadline: B's answer is a result, not A's TIMEOUT.
    engine = await make_engine(ScriptedGrader(), deadline_s=10)
    sample = Sample(response="slow:0.6")

    async def late() -> list[Result]:
        await asyncio.sleep(0.05)
        return await engine.score([sample], timeout_s=5)

    [a], [b] = await asyncio.gather(engine.score([sample], timeout_s=0.2), late())
    await engine.stop()
    assert a.status is Status.TIMEOUT
    assert b.status is Status.OK and b.reward == len("slow:0.6")


async def test_work_nobody_waits_for_is_cancelled() -> None:
    grader = WatchedGrader()
    engine = await make_engine(grader, deadline_s=30)
    caller = asyncio.create_task(engine.score([Sample(response="hang")]))
    await asyncio.sleep(0.1)  # batched and in the grader
    caller.cancel()  # the client hung up (HTTP disconnect, gRPC cancel)
    for _ in range(50):
        if grader.cancelled:
            break
        await asyncio.sleep(0.02)
    assert grader.cancelled == 1
    assert not engine._inflight  # the flight is gone: the next identical sample starts afresh
    await engine.stop()


async def test_work_is_kept_while_one_waiter_is_left() -> None:
    grader = WatchedGrader()
    engine = await make_engine(grader, deadline_s=30)
    sample = Sample(response="slow:0.3")
    gone = asyncio.create_task(engine.score([sample]))
    stays = asyncio.create_task(engine.score([sample]))
    await asyncio.sleep(0.1)
    gone.cancel()
    [result] = await stays
    await engine.stop()
    assert result.status is Status.OK and grader.cancelled == 0
