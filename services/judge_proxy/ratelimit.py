"""rpm/tpm limits per upstream: token buckets, in Redis when replicas must share them.

A bucket holds up to one minute's allowance and refills continuously. A request takes
one request token and its estimated tokens (prompt estimate + max_tokens) up front; when
the upstream reports real usage the difference is settled, so a bucket may go negative
and later requests wait longer. The Redis buckets live in one Lua script with Redis's own
clock, so every replica sees one bucket. When Redis fails the limiter falls back to local
buckets (one warning per outage): requests go on, limits become per replica.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from services.judge_proxy.settings import RateLimitSettings

log = logging.getLogger(__name__)


class RateLimitTimeoutError(Exception):
    """The wait for rate-limit capacity would run past the deadline."""


class RateLimiter(Protocol):
    async def acquire(self, tokens: int, deadline: float) -> float:
        """Wait for capacity; return the seconds waited; raise RateLimitTimeoutError."""
        ...

    async def settle(self, tokens_delta: int) -> None: ...

    async def aclose(self) -> None: ...


class _Bucket:
    __slots__ = ("capacity", "level", "stamp")

    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.level = float(per_minute)
        self.stamp = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.capacity / 60.0)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        return 0.0 if self.level >= amount else (amount - self.level) * 60.0 / self.capacity


class MemoryRateLimiter:
    """Both buckets in this process; exact for one replica."""

    def __init__(self, rpm: int, tpm: int) -> None:
        self._rpm = _Bucket(rpm) if rpm else None
        self._tpm = _Bucket(tpm) if tpm else None

    def try_take(self, tokens: int) -> float:
        """Take capacity now and return 0, or return how long to wait before trying again."""
        now = time.monotonic()
        wait = 0.0
        cost = 0.0
        if self._rpm is not None:
            self._rpm.refill(now)
            wait = max(wait, self._rpm.wait_for(1.0))
        if self._tpm is not None:
            self._tpm.refill(now)
            cost = min(float(tokens), self._tpm.capacity)  # a request larger than a minute still runs
            wait = max(wait, self._tpm.wait_for(cost))
        if wait > 0:
            return wait
        if self._rpm is not None:
            self._rpm.level -= 1.0
        if self._tpm is not None:
            self._tpm.level -= cost
        return 0.0

    async def _try_take(self, tokens: int) -> float:
        return self.try_take(tokens)

    async def acquire(self, tokens: int, deadline: float) -> float:
        return await _wait_loop(self._try_take, tokens, deadline)

    async def settle(self, tokens_delta: int) -> None:
        if self._tpm is not None:
            self._tpm.refill(time.monotonic())
            self._tpm.level = min(self._tpm.capacity, self._tpm.level - tokens_delta)

    async def aclose(self) -> None:
        return None


async def _wait_loop(take: Callable[[int], Awaitable[float]], tokens: int, deadline: float) -> float:
    started = time.monotonic()
    while True:
        wait = await take(tokens)
        now = time.monotonic()
        if wait <= 0:
            return now - started
        if now + wait >= deadline:
            raise RateLimitTimeoutError(
                f"rate limit needs {wait:.2f}s more; {max(0.0, deadline - now):.2f}s left"
            )
        await asyncio.sleep(wait)


_TAKE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function level(key, cap)
  local v = redis.call('HMGET', key, 'level', 'ts')
  local lvl = tonumber(v[1])
  local ts = tonumber(v[2])
  if lvl == nil or ts == nil then return cap end
  return math.min(cap, lvl + math.max(0, now - ts) * cap / 60)
end
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local wait = 0
local r = 0
local k = 0
if rpm > 0 then
  r = level(KEYS[1], rpm)
  if r < 1 then wait = math.max(wait, (1 - r) * 60 / rpm) end
end
if tpm > 0 then
  cost = math.min(cost, tpm)
  k = level(KEYS[2], tpm)
  if k < cost then wait = math.max(wait, (cost - k) * 60 / tpm) end
end
if wait > 0 then return tostring(wait) end
if rpm > 0 then
  redis.call('HSET', KEYS[1], 'level', tostring(r - 1), 'ts', tostring(now))
  redis.call('EXPIRE', KEYS[1], 120)
end
if tpm > 0 then
  redis.call('HSET', KEYS[2], 'level', tostring(k - cost), 'ts', tostring(now))
  redis.call('EXPIRE', KEYS[2], 120)
end
return '0'
"""

_SETTLE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tpm = tonumber(ARGV[1])
local delta = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'level', 'ts')
local lvl = tonumber(v[1])
local ts = tonumber(v[2])
if lvl == nil or ts == nil then lvl = tpm; ts = now end
lvl = math.min(tpm, math.min(tpm, lvl + math.max(0, now - ts) * tpm / 60) - delta)
redis.call('HSET', KEYS[1], 'level', tostring(lvl), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], 120)
return tostring(lvl)
"""


class RedisRateLimiter:
    """Buckets shared by every replica that names the same upstream and Redis."""

    def __init__(self, settings: RateLimitSettings, upstream: str, rpm: int, tpm: int) -> None:
        import redis.asyncio as redis

        self._settings = settings
        self._rpm = rpm
        self._tpm = tpm
        self._keys = [f"{settings.key_prefix}:{upstream}:rpm", f"{settings.key_prefix}:{upstream}:tpm"]
        self._client = redis.Redis.from_url(
            settings.redis_url,
            socket_timeout=settings.redis_timeout_s,
            socket_connect_timeout=settings.redis_timeout_s,
            retry_on_timeout=False,
        )
        self._take = self._client.register_script(_TAKE_SCRIPT)
        self._settle = self._client.register_script(_SETTLE_SCRIPT)
        self._local = MemoryRateLimiter(rpm, tpm)
        self._down_until = 0.0

    @property
    def shared(self) -> bool:
        return time.monotonic() >= self._down_until

    def _degrade(self, exc: Exception) -> None:
        if self.shared:
            log.warning(
                "redis rate limiter failed (%s: %s); local limits for %.1fs",
                type(exc).__name__,
                exc,
                self._settings.redis_retry_after_s,
            )
        self._down_until = time.monotonic() + self._settings.redis_retry_after_s

    async def _try_take(self, tokens: int) -> float:
        if not self.shared:
            return self._local.try_take(tokens)
        try:
            wait = await self._take(keys=self._keys, args=[self._rpm, self._tpm, tokens])
        except Exception as exc:  # Redis is an optimisation: a failure means local limits
            self._degrade(exc)
            return self._local.try_take(tokens)
        return float(wait)

    async def acquire(self, tokens: int, deadline: float) -> float:
        return await _wait_loop(self._try_take, tokens, deadline)

    async def settle(self, tokens_delta: int) -> None:
        if not self._tpm or not tokens_delta:
            return
        if not self.shared:
            await self._local.settle(tokens_delta)
            return
        try:
            await self._settle(keys=self._keys[1:], args=[self._tpm, tokens_delta])
        except Exception as exc:
            self._degrade(exc)

    async def aclose(self) -> None:
        await self._client.aclose()


class Unlimited:
    async def acquire(self, tokens: int, deadline: float) -> float:
        return 0.0

    async def settle(self, tokens_delta: int) -> None:
        return None

    async def aclose(self) -> None:
        return None


def make_rate_limiter(settings: RateLimitSettings, upstream: str, rpm: int, tpm: int) -> RateLimiter:
    if not rpm and not tpm:
        return Unlimited()
    if settings.backend == "redis":
        return RedisRateLimiter(settings, upstream, rpm, tpm)
    return MemoryRateLimiter(rpm, tpm)
