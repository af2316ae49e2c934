"""One poisoned sample stays its own failure.

A micro-batch mixes concurrent requests. The engine used to re-grade a failed batch one
sample at a time, each with the full server deadline: eleven slow but honest samples behind
one poison (two clients' worth) all came back TIMEOUT. Now the culprit alone fails, the
others are re-graded concurrently within their own deadlines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from arbiter.contract import NO_CACHE_KEY, GraderInfo, Result, Sample, Status
from services.scoring.cache import MemoryCache
from services.scoring.engine import ScoringEngine
from tests.helpers import ScriptedGrader, server_settings


async def test_a_poison_fails_alone_and_other_clients_get_their_rewards() -> None:
    engine = ScoringEngine(ScriptedGrader(), server_settings(deadline_s=2.0), cache=MemoryCache(100))
    await engine.start()
    try:
        mine = [Sample(response="raise")] + [Sample(prompt=f"a{i}", response="slow:0.3") for i in range(5)]
        theirs = [Sample(prompt=f"b{i}", response="slow:0.3") for i in range(6)]
        first, second = await asyncio.gather(engine.score(mine), engine.score(theirs))
    finally:
        await engine.stop()
    assert first[0].status is Status.GRADER_ERROR and "scripted failure" in first[0].detail
    assert [r.status for r in first[1:] + second] == [Status.OK] * 11
    assert all(r.reward == len("slow:0.3") for r in first[1:] + second)


async def test_a_sample_past_its_deadline_is_not_regraded() -> None:
    grader = ScriptedGrader()
    engine = ScoringEngine(grader, server_settings(deadline_s=5.0))
    await engine.start()
    try:
        # The batch raises after its callers' deadline: re-grading would only burn the grader.
        results = await engine.score([Sample(response="slow:0.4"), Sample(response="raise")], timeout_s=0.2)
        await asyncio.sleep(0.5)
    finally:
        await engine.stop()
    assert [r.status for r in results] == [Status.TIMEOUT, Status.TIMEOUT]
    assert grader.batches == [2]  # one try, no re-grading after the deadline


class _FallbackJudge:
    """Says 0.1 marked not-cacheable while its primary is 'down', then 0.9 from the primary."""

    def __init__(self) -> None:
        self.primary_up = False
        self.calls = 0
        self.info = GraderInfo(name="judge", version="1", config_hash="x")
        self.log_keys = ("judge/score",)

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        self.calls += len(samples)
        if self.primary_up:
            return [Result(reward=0.9, score=1.0) for _ in samples]
        return [Result(reward=0.1, score=0.0).not_cached() for _ in samples]

    async def aclose(self) -> None:
        return None


async def test_a_result_marked_not_cached_is_graded_again() -> None:
    judge = _FallbackJudge()
    engine = ScoringEngine(judge, server_settings(), cache=MemoryCache(100))
    await engine.start()
    sample = Sample(prompt="q", response="a")
    try:
        degraded = await engine.score([sample])
        await asyncio.sleep(0.05)  # cache writes run in the background
        judge.primary_up = True
        recovered = await engine.score([sample])
        await asyncio.sleep(0.05)
        cached = await engine.score([sample])
    finally:
        await engine.stop()
    assert degraded[0].reward == 0.1 and degraded[0].logs[NO_CACHE_KEY] == 1.0
    assert recovered[0].reward == 0.9 and recovered[0].logs[NO_CACHE_KEY] == 0.0
    assert cached[0].reward == 0.9 and cached[0].logs["cache/hit"] == 1.0
    assert judge.calls == 2
