"""Caches: the key scheme, the LRU, and a real redis-server (up, and killed mid-run)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.common.settings import CacheSettings
from services.scoring.cache import MemoryCache, RedisCache, cache_key, make_cache
from services.scoring.engine import ScoringEngine
from testkit.procs import start_redis
from tests.helpers import ScriptedGrader, free_port, server_settings

INFO = GraderInfo(name="g", version="1", config_hash="abc")
RESULT = Result(reward=1.0, score=1.0, status=Status.OK, detail="d", logs={"x": 2.0})


def test_key_covers_grader_identity_and_every_sample_field() -> None:
    base = Sample(prompt="p", response="r", label="l", metadata={"a": "1", "b": "2"})
    key = cache_key(INFO, base)
    assert key == cache_key(INFO, Sample(prompt="p", response="r", label="l", metadata={"b": "2", "a": "1"}))
    variants = [
        cache_key(INFO.model_copy(update={"version": "2"}), base),
        cache_key(INFO.model_copy(update={"config_hash": "other"}), base),
        cache_key(INFO.model_copy(update={"name": "h"}), base),
        cache_key(INFO, base.model_copy(update={"prompt": "p2"})),
        cache_key(INFO, base.model_copy(update={"response": "r2"})),
        cache_key(INFO, base.model_copy(update={"label": "l2"})),
        cache_key(INFO, base.model_copy(update={"metadata": {"a": "1"}})),
        # field boundaries matter: ("ab", "c") is not ("a", "bc")
        cache_key(INFO, Sample(prompt="pr", response="", label="l", metadata=base.metadata)),
    ]
    assert len({key, *variants}) == len(variants) + 1
    assert cache_key(INFO, Sample(response="\ud800 lone surrogate"))  # hashes, never raises


async def test_memory_cache_is_an_lru_with_ttl() -> None:
    cache = MemoryCache(max_entries=2, ttl_s=0)
    await cache.set_many([("a", RESULT), ("b", RESULT)])
    assert await cache.get_many(["a"]) == [RESULT]  # a is now the most recent
    await cache.set_many([("c", RESULT)])
    assert await cache.get_many(["a", "b", "c"]) == [RESULT, None, RESULT]
    expiring = MemoryCache(max_entries=10, ttl_s=0.05)
    await expiring.set_many([("k", RESULT)])
    await asyncio.sleep(0.1)
    assert await expiring.get_many(["k"]) == [None]


async def test_redis_round_trip(redis_url: str) -> None:
    cache = make_cache(CacheSettings(backend="redis", redis_url=redis_url, ttl_s=60))
    assert isinstance(cache, RedisCache)
    key = cache_key(INFO, Sample(response="r"))
    assert await cache.get_many([key]) == [None]
    await cache.set_many([(key, RESULT)])
    assert await cache.get_many([key, "missing"]) == [RESULT, None]
    await cache.aclose()


async def test_two_replicas_share_results_through_redis(redis_url: str) -> None:
    settings = CacheSettings(backend="redis", redis_url=redis_url)
    graders = [ScriptedGrader(), ScriptedGrader()]
    engines = [ScoringEngine(g, server_settings(), cache=make_cache(settings)) for g in graders]
    for engine in engines:
        await engine.start()
    sample = Sample(response="shared-" + str(time.time()))
    first = await engines[0].score([sample])
    await asyncio.sleep(0.1)
    second = await engines[1].score([sample])
    for engine in engines:
        await engine.stop()
    assert first[0].reward == second[0].reward
    assert second[0].logs["cache/hit"] == 1.0
    assert graders[1].batches == []


async def test_redis_down_degrades_to_no_cache(caplog: pytest.LogCaptureFixture) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    grader = ScriptedGrader()
    engine = ScoringEngine(
        grader, server_settings(), cache=make_cache(CacheSettings(backend="redis", redis_url=dead))
    )
    await engine.start()
    with caplog.at_level(logging.WARNING):
        results = [await engine.score([Sample(response="abc")]) for _ in range(3)]
    await engine.stop()
    assert all(r[0].status is Status.OK and r[0].reward == 3.0 for r in results)
    warnings = [r for r in caplog.records if "redis cache" in r.getMessage()]
    assert len(warnings) == 1, "one warning per outage, not one per request"


async def test_redis_killed_mid_run_then_back(tmp_path: object) -> None:
    port = free_port()
    proc = start_redis(port)
    settings = CacheSettings(
        backend="redis", redis_url=f"redis://127.0.0.1:{port}/0", redis_retry_after_s=0.2
    )
    cache = make_cache(settings)
    engine = ScoringEngine(ScriptedGrader(), server_settings(), cache=cache)
    await engine.start()
    assert (await engine.score([Sample(response="one")]))[0].status is Status.OK
    proc.kill()
    proc.wait()
    during = await engine.score([Sample(response="two")])
    assert during[0].status is Status.OK and during[0].reward == 3.0
    proc = start_redis(port)  # back, on the same port
    await asyncio.sleep(0.3)
    await engine.score([Sample(response="three")])
    await asyncio.sleep(0.1)
    after = await engine.score([Sample(response="three")])
    await engine.stop()
    proc.kill()
    proc.wait()
    assert after[0].logs["cache/hit"] == 1.0, "caching resumes once Redis is back"
