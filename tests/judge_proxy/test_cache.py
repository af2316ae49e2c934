"""The judge cache and single flight cut upstream calls; errors and sampled verdicts are not stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from arbiter.contract import Sample, Status
from services.judge_proxy.grader import JudgeGrader
from tests.judge_proxy.fake_openai import FakeOpenAI, directive

Make = Callable[..., JudgeGrader]


def sample(text: str, **metadata: str) -> Sample:
    return Sample(prompt="Q", response=text, metadata=metadata)


async def test_identical_requests_hit_the_cache_across_samples(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    (first,) = await grader.score([sample(f"A {directive(score=6)}", run="1")])
    # another sample (different metadata) that renders the very same request: a cache hit
    (second,) = await grader.score([sample(f"A {directive(score=6)}", run="2")])
    assert fake.count == 1
    assert first.reward == second.reward and second.logs["judge/cache_hits"] == 1.0
    assert second.logs["judge/attempts"] == 0.0 and "cached" in second.detail
    get = grader.metrics.registry.get_sample_value
    assert get("arbiter_judge_cache_lookups_total", {"result": "hit"}) == 1.0


async def test_identical_calls_in_flight_share_one_upstream_request(make_grader: Make) -> None:
    async with FakeOpenAI(latency_s=0.3) as slow:
        grader = make_grader(slow)
        same = [sample(f"A {directive(score=7)}", n=str(i)) for i in range(20)]
        results = await asyncio.gather(grader.score(same[:10]), grader.score(same[10:]))
        assert slow.count == 1
        flat = [r for batch in results for r in batch]
        assert all(r.status is Status.OK and r.logs["judge/score"] == 7.0 for r in flat)
        assert sum(r.logs["judge/cache_hits"] for r in flat) == 19


async def test_errors_are_not_cached(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake, retry={"max_attempts": 1})
    text = f"A {directive(id='once', status=500, times=1, score=5)}"
    (failed,) = await grader.score([sample(text)])
    (retried,) = await grader.score([sample(text)])
    assert failed.status is Status.UPSTREAM_ERROR and retried.status is Status.OK
    assert fake.by_key["once"] == 2 and retried.logs["judge/cache_hits"] == 0.0


async def test_sampled_verdicts_are_not_cached_unless_asked(fake: FakeOpenAI, make_grader: Make) -> None:
    sampled = make_grader(fake, sampling={"temperature": 0.7})
    assert "nondeterministic" in sampled.info.capabilities
    for _ in range(2):
        await sampled.score([sample(f"A {directive(score=5)}")])
    assert fake.count == 2
    seeded = make_grader(fake, sampling={"temperature": 0.7, "seed": 1})
    forced = make_grader(fake, sampling={"temperature": 0.7}, cache_nondeterministic=True)
    for grader in (seeded, seeded, forced, forced):
        await grader.score([sample(f"B {directive(score=5)}")])
    assert fake.count == 4  # one each for the seeded and the forced grader


async def test_the_key_covers_sampling_and_model(
    fake: FakeOpenAI, backup: FakeOpenAI, make_grader: Make, redis_url: str
) -> None:
    cache = {"backend": "redis", "redis_url": redis_url}  # one store for every grader below
    text = f"key {directive(score=5)} {id(cache)}"
    graders = [
        make_grader(fake, judge_cache=cache),
        make_grader(fake, judge_cache=cache),  # same settings: a hit
        make_grader(fake, judge_cache=cache, sampling={"max_tokens": 99}),  # other sampling: a miss
        make_grader(backup, judge_cache=cache),  # other model: a miss
    ]
    for grader in graders:
        await grader.score([sample(text)])
    assert fake.count == 2 and backup.count == 1


async def test_a_redis_judge_cache_is_shared_between_replicas(
    fake: FakeOpenAI, make_grader: Make, redis_url: str
) -> None:
    cache = {"backend": "redis", "redis_url": redis_url}
    one, two = make_grader(fake, judge_cache=cache), make_grader(fake, judge_cache=cache)
    text = f"shared {directive(score=9)} {id(one)}"
    (a,) = await one.score([sample(text)])
    (b,) = await two.score([sample(text)])
    assert fake.count == 1 and a.reward == b.reward and b.logs["judge/cache_hits"] == 1.0
