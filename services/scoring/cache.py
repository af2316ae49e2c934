"""Result cache: an in-process LRU by default, Redis when shared across replicas.

Both sit behind one key scheme (a canonical hash of grader identity + sample), so a
replica restart or a move to Redis changes nothing but where results live. Redis is
an optimisation, never a dependency: when it fails the cache turns into a miss for
`redis_retry_after_s` and says so in the log, and requests go on.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from typing import Protocol

from arbiter.contract import GraderInfo, Result, Sample
from services.common.settings import CacheSettings

log = logging.getLogger(__name__)

KEY_SCHEME = "arbiter:v1"


def cache_key(grader: GraderInfo, sample: Sample) -> str:
    """Canonical hash of who grades (name, version, config) and what (the whole sample)."""
    canonical = json.dumps(
        [
            grader.name,
            grader.version,
            grader.config_hash,
            sample.prompt,
            sample.response,
            sample.label,
            sorted(sample.metadata.items()),
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_SCHEME}:{grader.name}:{digest}"


class Cache(Protocol):
    # True: the store is this process's memory, a write costs less than a task to wait for it.
    local: bool

    async def get_many(self, keys: Sequence[str]) -> list[Result | None]: ...

    async def set_many(self, items: Sequence[tuple[str, Result]]) -> None: ...

    async def aclose(self) -> None: ...


class NullCache:
    local = True

    async def get_many(self, keys: Sequence[str]) -> list[Result | None]:
        return [None] * len(keys)

    async def set_many(self, items: Sequence[tuple[str, Result]]) -> None:
        return None

    async def aclose(self) -> None:
        return None


class MemoryCache:
    """LRU bounded by entry count; entries expire after ttl_s (0 = never)."""

    local = True

    def __init__(self, max_entries: int, ttl_s: float = 0.0) -> None:
        self._max = max_entries
        self._ttl = ttl_s
        self._data: collections.OrderedDict[str, tuple[float, Result]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    async def get_many(self, keys: Sequence[str]) -> list[Result | None]:
        now = time.monotonic()
        found: list[Result | None] = []
        for key in keys:
            entry = self._data.get(key)
            if entry is None:
                found.append(None)
            elif self._ttl and now - entry[0] > self._ttl:
                del self._data[key]
                found.append(None)
            else:
                self._data.move_to_end(key)
                found.append(entry[1])
        return found

    async def set_many(self, items: Sequence[tuple[str, Result]]) -> None:
        if self._max <= 0:
            return
        now = time.monotonic()
        for key, result in items:
            self._data[key] = (now, result)
            self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    async def aclose(self) -> None:
        self._data.clear()


class RedisCache:
    """Results as JSON strings under the shared key scheme, with a TTL."""

    local = False  # a round trip: the engine writes in the background, replies do not wait

    def __init__(self, settings: CacheSettings) -> None:
        import redis.asyncio as redis

        self._settings = settings
        # A bounded pool that waits (up to the timeout) for a free connection: a burst of
        # thousands of requests must not open thousands of sockets to Redis.
        pool = redis.BlockingConnectionPool.from_url(
            settings.redis_url,
            max_connections=settings.redis_max_connections,
            timeout=settings.redis_timeout_s,
            socket_timeout=settings.redis_timeout_s,
            socket_connect_timeout=settings.redis_timeout_s,
            retry_on_timeout=False,
        )
        self._client = redis.Redis(connection_pool=pool)
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _degrade(self, op: str, exc: Exception) -> None:
        if self.available:
            log.warning(
                "redis cache %s failed (%s: %s); caching off for %.1fs",
                op,
                type(exc).__name__,
                exc,
                self._settings.redis_retry_after_s,
            )
        self._down_until = time.monotonic() + self._settings.redis_retry_after_s

    async def get_many(self, keys: Sequence[str]) -> list[Result | None]:
        if not keys or not self.available:
            return [None] * len(keys)
        try:
            raw = await self._client.mget(list(keys))
        except Exception as exc:  # any Redis failure is a miss, never a failed request
            self._degrade("read", exc)
            return [None] * len(keys)
        found: list[Result | None] = []
        for value in raw:
            try:
                found.append(Result.model_validate_json(value) if value else None)
            except ValueError:  # a foreign or corrupt entry is a miss
                found.append(None)
        return found

    async def set_many(self, items: Sequence[tuple[str, Result]]) -> None:
        if not items or not self.available:
            return
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for key, result in items:
                    pipe.set(key, result.model_dump_json(), ex=self._settings.ttl_s or None)
                await pipe.execute()
        except Exception as exc:
            self._degrade("write", exc)

    async def aclose(self) -> None:
        await self._client.aclose(close_connection_pool=True)


def make_cache(settings: CacheSettings) -> Cache:
    if settings.backend == "redis":
        return RedisCache(settings)
    if settings.backend == "memory" and settings.max_entries > 0:
        return MemoryCache(settings.max_entries, settings.ttl_s)
    return NullCache()
