"""Upstream behaviour over real HTTP: retries, Retry-After, fallback, cooldown, deadlines, keys, limits."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest

from arbiter.contract import Sample, Status
from services.judge_proxy.build import build_grader
from services.judge_proxy.grader import JudgeGrader
from tests.judge_proxy.fake_openai import FakeOpenAI, directive
from tests.judge_proxy.judges import judge_settings

Make = Callable[..., JudgeGrader]


def sample(**script: object) -> Sample:
    return Sample(prompt="What is 2 + 2?", response=f"4 {directive(**script)}")


async def test_500s_are_retried_and_only_the_failed_item_is_retried(
    fake: FakeOpenAI, make_grader: Make
) -> None:
    grader = make_grader(fake)
    flaky, fine = sample(id="flaky", status=500, times=2, score=9), sample(id="fine", score=4)
    results = await grader.score([flaky, fine])
    assert [r.status for r in results] == [Status.OK, Status.OK]
    assert results[0].logs["judge/score"] == 9.0 and results[1].logs["judge/score"] == 4.0
    assert fake.by_key["flaky"] == 3 and fake.by_key["fine"] == 1
    assert results[0].logs["judge/attempts"] == 3 and results[0].logs["judge/retries"] == 2
    assert results[1].logs["judge/retries"] == 0
    samples = grader.metrics.registry.get_sample_value
    assert samples("arbiter_judge_retries_total", {"upstream": "u0", "reason": "http_5xx"}) == 2
    assert samples("arbiter_judge_upstream_requests_total", {"upstream": "u0", "outcome": "http_5xx"}) == 2


async def test_retry_after_is_honoured(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    (result,) = await grader.score([sample(id="busy", status=429, retry_after=1, times=1, score=6)])
    assert result.status is Status.OK and result.logs["judge/score"] == 6.0
    assert fake.by_key["busy"] == 2
    # the retry waited out Retry-After: backoff alone is at most 0.05 s in these settings
    assert fake.arrivals[1] - fake.arrivals[0] >= 0.9


async def test_a_retry_after_beyond_the_budget_fails_at_once(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake, deadline_s=5.0)
    started = time.monotonic()
    (result,) = await grader.score([sample(id="later", status=429, retry_after=30)])
    assert time.monotonic() - started < 3.0
    assert result.status is Status.UPSTREAM_ERROR
    assert "HTTP 429" in result.detail and "cooling down or rate limited" in result.detail
    assert result.logs["judge/upstream_error"] == 1.0 and fake.by_key["later"] == 1


async def test_fallback_to_the_next_upstream_then_cooldown(
    fake: FakeOpenAI, backup: FakeOpenAI, make_grader: Make
) -> None:
    fake.behaviour = {"status": 500}
    grader = make_grader(
        fake, backup, retry={"cooldown_after_failures": 2, "cooldown_s": 60, "backoff_base_s": 0.01}
    )
    first = await grader.score([sample(score=5)])
    second = await grader.score([sample(score=6)])
    third = await grader.score([sample(score=7)])
    assert [r[0].status for r in (first, second, third)] == [Status.OK] * 3
    assert [r[0].logs["judge/score"] for r in (first, second, third)] == [5.0, 6.0, 7.0]
    # two failures put the primary in cooldown: the third sample went straight to the backup
    assert fake.count == 2 and backup.count == 3
    assert third[0].logs["judge/attempts"] == 1.0
    get = grader.metrics.registry.get_sample_value
    assert get("arbiter_judge_upstream_cooling", {"upstream": "u0"}) == 1.0
    assert get("arbiter_judge_fallbacks_total") == 3.0


async def test_a_hung_upstream_never_delays_the_reward_past_its_deadline(
    fake: FakeOpenAI, make_grader: Make
) -> None:
    grader = make_grader(fake, deadline_s=2.0, fallback_reward=-1.0)
    started = time.monotonic()
    results = await grader.score([sample(hang=True), sample(score=8)])
    elapsed = time.monotonic() - started
    assert elapsed < 2.0 + 1.0
    assert results[0].status is Status.TIMEOUT and results[0].reward == -1.0
    assert "no answer within" in results[0].detail
    assert results[1].status is Status.OK  # its batch neighbour was not held hostage


async def test_a_hung_primary_falls_back_within_the_deadline(
    fake: FakeOpenAI, backup: FakeOpenAI, make_grader: Make
) -> None:
    fake.behaviour = {"hang": True}
    grader = make_grader(fake, backup, upstream={"attempt_timeout_s": 0.5}, deadline_s=5.0)
    started = time.monotonic()
    (result,) = await grader.score([sample(score=3)])
    assert time.monotonic() - started < 5.0
    assert result.status is Status.OK and result.logs["judge/score"] == 3.0
    assert backup.count == 1


async def test_malformed_completions_are_upstream_errors_not_zeros(
    fake: FakeOpenAI, make_grader: Make
) -> None:
    grader = make_grader(fake, retry={"max_attempts": 2, "backoff_base_s": 0.01})
    results = await grader.score(
        [sample(id="html", malformed="json"), sample(id="empty", malformed="no_choices")]
    )
    assert [r.status for r in results] == [Status.UPSTREAM_ERROR, Status.UPSTREAM_ERROR]
    assert "not a chat completion" in results[0].detail and "2 attempt(s) failed" in results[0].detail
    assert fake.by_key["html"] == 2 and fake.by_key["empty"] == 2


async def test_client_errors_are_not_retried_on_the_same_upstream(
    fake: FakeOpenAI, make_grader: Make
) -> None:
    grader = make_grader(fake)
    (result,) = await grader.score([sample(id="bad", status=400)])
    assert result.status is Status.UPSTREAM_ERROR and "HTTP 400" in result.detail
    assert fake.by_key["bad"] == 1


async def test_the_api_key_comes_from_the_named_env_var_and_is_never_shown(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("JUDGE_TEST_KEY", secret)
    fake.behaviour = {"status": 500}
    settings = judge_settings(fake, upstream={"api_key_env": "JUDGE_TEST_KEY"}, retry={"max_attempts": 2})
    caplog.set_level(logging.DEBUG)
    grader = build_grader(settings)
    (result,) = await grader.score([sample()])
    await grader.aclose()
    assert fake.requests[0].authorization == f"Bearer {secret}"
    assert secret not in result.detail and secret not in caplog.text
    assert secret not in settings.model_dump_json() and secret not in repr(grader.pool.upstreams)
    monkeypatch.delenv("JUDGE_TEST_KEY")
    with pytest.raises(ValueError, match="JUDGE_TEST_KEY is not set"):
        build_grader(settings)


async def test_concurrency_cap_per_upstream(make_grader: Make) -> None:
    async with FakeOpenAI(latency_s=0.2) as slow:
        grader = make_grader(slow, upstream={"max_concurrency": 2})
        results = await grader.score([sample(id=str(i), score=5) for i in range(6)])
        assert all(r.status is Status.OK for r in results)
        assert slow.count == 6 and slow.peak_inflight == 2


async def test_rpm_limit_in_memory_waits_inside_the_deadline(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake, upstream={"rpm": 2}, deadline_s=3.0)
    results = await grader.score([sample(id=str(i), score=5) for i in range(4)])
    # burst of 2, then one request every 30 s: the last two cannot fit in a 3 s deadline
    assert [r.status for r in results].count(Status.OK) == 2
    failed = [r for r in results if r.status is not Status.OK]
    assert all(r.status is Status.TIMEOUT and "rate limit" in r.detail for r in failed)
    assert fake.count == 2


async def test_rpm_limit_is_shared_through_redis(fake: FakeOpenAI, make_grader: Make, redis_url: str) -> None:
    limits = {"backend": "redis", "redis_url": redis_url, "key_prefix": f"test:{time.monotonic_ns()}"}
    one = make_grader(fake, upstream={"rpm": 3}, ratelimit=limits, deadline_s=2.0)
    two = make_grader(fake, upstream={"rpm": 3}, ratelimit=limits, deadline_s=2.0)
    results = await asyncio.gather(
        one.score([sample(id=f"a{i}", score=5) for i in range(3)]),
        two.score([sample(id=f"b{i}", score=5) for i in range(3)]),
    )
    statuses = [r.status for batch in results for r in batch]
    assert statuses.count(Status.OK) == 3  # one bucket of 3 for both replicas
    assert fake.count == 3


async def test_tpm_reserves_the_estimate_and_settles_real_usage(fake: FakeOpenAI, make_grader: Make) -> None:
    # Each request reserves ~1.5k tokens (prompt estimate + max_tokens 1024) of a 2.2k-token minute
    # and uses ~0.3k: only settling the difference lets a second request through in time.
    grader = make_grader(fake, upstream={"tpm": 2200}, deadline_s=3.0)
    (first,) = await grader.score([sample(id="t1", score=5)])
    (second,) = await grader.score([sample(id="t2", score=5)])
    assert first.status is Status.OK and second.status is Status.OK
    assert first.logs["judge/prompt_tokens"] + first.logs["judge/completion_tokens"] < 700
    both = await grader.score([sample(id="t3", score=5), sample(id="t4", score=5)])
    # reserved together before either settles: one of them has to wait past its budget
    assert sorted(r.status.value for r in both) == ["OK", "TIMEOUT"]


async def test_tpm_settles_through_redis_too(fake: FakeOpenAI, make_grader: Make, redis_url: str) -> None:
    limits = {"backend": "redis", "redis_url": redis_url, "key_prefix": f"tpm:{time.monotonic_ns()}"}
    grader = make_grader(fake, upstream={"tpm": 2200}, ratelimit=limits, deadline_s=3.0)
    for name in ("r1", "r2"):
        (result,) = await grader.score([sample(id=name, score=5)])
        assert result.status is Status.OK
    both = await grader.score([sample(id="r3", score=5), sample(id="r4", score=5)])
    assert sorted(r.status.value for r in both) == ["OK", "TIMEOUT"]


async def test_a_dead_redis_means_local_limits_not_failures(fake: FakeOpenAI, make_grader: Make) -> None:
    from tests.helpers import free_port

    limits = {"backend": "redis", "redis_url": f"redis://127.0.0.1:{free_port()}/0", "redis_timeout_s": 0.2}
    grader = make_grader(fake, upstream={"rpm": 2}, ratelimit=limits, deadline_s=3.0)
    results = await grader.score([sample(id=str(i), score=5) for i in range(3)])
    assert [r.status for r in results].count(Status.OK) == 2  # the local bucket still limits
    assert fake.count == 2


async def test_tokens_and_cost_are_counted_from_usage_and_prices(fake: FakeOpenAI, make_grader: Make) -> None:
    prices = {"input_price_per_mtok": 2.5, "output_price_per_mtok": 10.0}
    grader = make_grader(fake, upstream=prices)
    (result,) = await grader.score([sample(score=5)])
    prompt, completion = result.logs["judge/prompt_tokens"], result.logs["judge/completion_tokens"]
    assert prompt > 0 and completion > 0
    assert result.logs["judge/cost_usd"] == pytest.approx((prompt * 2.5 + completion * 10.0) / 1e6)
    get = grader.metrics.registry.get_sample_value
    assert get("arbiter_judge_tokens_total", {"upstream": "u0", "kind": "prompt"}) == prompt
    assert get("arbiter_judge_cost_usd_total", {"upstream": "u0"}) == pytest.approx(
        result.logs["judge/cost_usd"]
    )
    assert get("arbiter_judge_upstream_latency_seconds_count", {"upstream": "u0"}) == 1.0
