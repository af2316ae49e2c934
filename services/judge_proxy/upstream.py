"""Calls to OpenAI-compatible chat endpoints: one retry loop, bounded by the caller's deadline.

Each upstream owns one shared `aiohttp.ClientSession` (no retries of its own: the pool's
loop is the only one), a concurrency semaphore and an rpm/tpm limiter. aiohttp rather than
httpx: at 64 requests in flight httpx's connection pool spent ~10x the CPU per request here
and capped the judge near 130 requests/s (bench/bench_judge.py). The pool tries upstreams
in order, skipping those cooling down; a failed attempt moves on to the next upstream at
once, and after a full round it backs off (full jitter, or longer when Retry-After or a
cooldown says so). Nothing waits past the deadline: when the next wait would cross it,
the call fails now with every attempt's reason in the detail.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from services.common.settings import UPSTREAM_KEEPALIVE_S
from services.judge_proxy.metrics import JudgeMetrics
from services.judge_proxy.ratelimit import RateLimiter, RateLimitTimeoutError, make_rate_limiter
from services.judge_proxy.settings import RateLimitSettings, RetrySettings, UpstreamSettings

log = logging.getLogger(__name__)

_TIME_KINDS = frozenset({"timeout", "no_slot", "rate_limited"})
# A 400 that says the request is too large for the model: the sample's failure, not the upstream's.
_TOO_LARGE = re.compile(
    r"context[ _-]?(?:length|window)|maximum context|too many tokens"
    r"|(?:prompt|input|request|string) is too long|reduce the length|token limit"
    r"|exceeds? the (?:model|maximum)|too large",
    re.IGNORECASE,
)
MIN_ATTEMPT_S = 0.05  # less time than this left: not worth another attempt
NO_UPSTREAM = (
    "judge_proxy has no upstream configured: add judge_proxy.upstreams "
    "(base_url, model, api_key_env) to the settings"
)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A fully rendered chat-completions request (model excepted: each upstream names its own)."""

    messages: tuple[tuple[str, str], ...]
    params: tuple[tuple[str, Any], ...]  # sampling, logprobs, response_format: sorted, hashable

    @property
    def estimated_tokens(self) -> int:
        """Prompt estimate (4 characters a token) plus the completion cap, for tpm budgeting."""
        chars = sum(len(content) for _, content in self.messages)
        return chars // 4 + 8 * len(self.messages) + int(dict(self.params).get("max_tokens", 0))

    def body(self, model: str, logprobs: bool) -> dict[str, Any]:
        params = dict(self.params)
        if not logprobs:
            params.pop("logprobs", None)
            params.pop("top_logprobs", None)
        return {
            "model": model,
            "messages": [{"role": role, "content": content} for role, content in self.messages],
            "n": 1,
            "stream": False,
            **params,
        }


@dataclass(slots=True)
class Completion:
    text: str
    finish_reason: str | None
    refusal: str | None
    logprobs: list[dict[str, Any]] | None  # OpenAI's logprobs.content entries, unchecked
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    upstream: str
    model: str
    latency_s: float
    attempts: int = 1


class AttemptError(Exception):
    """One HTTP attempt failed; `kind` names how, for metrics and the detail."""

    def __init__(
        self,
        kind: str,
        message: str,
        retry_after: float | None = None,
        retry_same: bool = True,
        counts: bool = True,
        rejected: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.retry_same = retry_same  # False: this upstream will not do better on this request
        self.counts = counts  # False: not the upstream's fault (our queue, our rate limit, the request)
        self.rejected = rejected  # the request itself was refused (too long for the model)


class UpstreamError(Exception):
    """No upstream produced a completion: attempts exhausted, deadline reached, or none configured."""

    def __init__(self, detail: str, attempts: int, timed_out: bool = False, rejected: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.attempts = attempts
        self.timed_out = timed_out
        self.rejected = rejected  # every upstream tried refused the request itself: the sample's fault


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Retry-After in seconds (or OpenAI's retry-after-ms, or an HTTP date), when given."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


_FILTERED = re.compile(
    r"content[ _-]?(?:filter|policy|management|moderation)|safety (?:system|filter)|responsible ?ai"
    r"|flagged (?:as|by|for)|moderation|policy violation",
    re.IGNORECASE,
)


def excerpt_of(payload: bytes, limit: int = 2000) -> str:
    return payload[:limit].decode("utf-8", "replace")


def _logprobs(choice: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The raw `logprobs.content` entries; parsing.expected_value checks the one it reads."""
    content = (choice.get("logprobs") or {}).get("content")
    return content if isinstance(content, list) and content else None


class Upstream:
    def __init__(
        self,
        settings: UpstreamSettings,
        retry: RetrySettings,
        ratelimit: RateLimitSettings,
        metrics: JudgeMetrics,
    ) -> None:
        self.settings = settings
        self.label = settings.label
        self._retry = retry
        self._metrics = metrics
        self._api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        if settings.api_key_env and not self._api_key:
            raise ValueError(f"upstream {self.label}: environment variable {settings.api_key_env} is not set")
        self._limiter: RateLimiter = make_rate_limiter(ratelimit, self.label, settings.rpm, settings.tpm)
        self._slots = asyncio.Semaphore(settings.max_concurrency)
        self._client: aiohttp.ClientSession | None = None
        self._url = settings.base_url.rstrip("/") + "/chat/completions"
        self.failures = 0
        self.cooling_until = 0.0  # no traffic before this instant (breaker or Retry-After), probes aside
        self._told_until = 0.0  # the upstream's own Retry-After: never probed through
        self._next_probe = 0.0  # after a failed probe, the next one waits probe_interval_s
        self.probe: asyncio.Future[None] | None = None  # the half-open probe in flight, if any
        metrics.cooldown.labels(self.label).set_function(lambda: float(self.cooling(time.monotonic())))
        # children resolved once: labels() on every request is measurable at 1000+ requests/s
        self._ok = metrics.upstream_requests.labels(self.label, "ok")
        self._latency = metrics.upstream_latency.labels(self.label)
        self._prompt_tokens = metrics.tokens.labels(self.label, "prompt")
        self._completion_tokens = metrics.tokens.labels(self.label, "completion")
        self._cost = metrics.cost.labels(self.label)

    def __repr__(self) -> str:  # never the key
        return f"Upstream({self.label!r}, {self.settings.base_url!r})"

    @property
    def client(self) -> aiohttp.ClientSession:
        """Created on first use, inside the running loop: constructing a grader stays cheap."""
        if self._client is None or self._client.closed:
            headers = {**self.settings.headers, "content-type": "application/json"}
            if self._api_key:
                headers["authorization"] = f"Bearer {self._api_key}"
            connector = aiohttp.TCPConnector(
                limit=self.settings.max_concurrency, limit_per_host=0, keepalive_timeout=UPSTREAM_KEEPALIVE_S
            )
            self._client = aiohttp.ClientSession(
                connector=connector,
                headers=headers,
                # the attempt's deadline is an asyncio.timeout around each call (one timer, not two)
                timeout=aiohttp.ClientTimeout(total=None, connect=self.settings.attempt_timeout_s),
                raise_for_status=False,
            )
        return self._client

    def cooling(self, now: float) -> bool:
        return now < self.cooling_until

    def probe_ready(self, now: float) -> bool:
        """Half-open: while the breaker pauses this upstream, one request at a time may test it
        (never through a Retry-After the upstream asked for)."""
        return self.cooling(now) and self.probe is None and now >= self.next_try()

    def next_try(self) -> float:
        """When a call may go to this upstream next: a probe's turn, or the end of the pause."""
        return min(self.cooling_until, max(self._told_until, self._next_probe))

    def _succeeded(self) -> None:
        self.failures = 0
        self.cooling_until = min(self.cooling_until, self._told_until)  # it answers: the breaker closes

    def _failed(self, error: AttemptError, probing: bool = False) -> None:
        now = time.monotonic()
        if error.retry_after is not None:
            pause = min(error.retry_after, self._retry.max_retry_after_s)
            self._told_until = max(self._told_until, now + pause)
            self.cooling_until = max(self.cooling_until, now + pause)
        if not error.counts or error.kind == "http_429":
            return
        if probing:  # the probe failed: the breaker stays open for another pause
            self.cooling_until = max(self.cooling_until, now + self._retry.cooldown_s)
            self._next_probe = now + self._retry.probe_interval_s
            self.failures = 0
            return
        self.failures += 1
        if self.failures >= self._retry.cooldown_after_failures and self._retry.cooldown_s > 0:
            if not self.cooling(now):
                log.warning(
                    "judge upstream %s failed %d times in a row (%s); no traffic for %.0fs",
                    self.label,
                    self.failures,
                    error,
                    self._retry.cooldown_s,
                )
            self.cooling_until = max(self.cooling_until, now + self._retry.cooldown_s)
            self.failures = 0

    async def send(
        self, request: ChatRequest, deadline: float, logprobs: bool, probing: bool = False
    ) -> Completion:
        """One attempt; raises AttemptError. The slot and rate-limit waits count against `deadline`.

        `probing`: the half-open probe of a paused upstream; its outcome closes or re-opens the breaker.
        """
        if not probing:
            return await self._send(request, deadline, logprobs, probing)
        self.probe = asyncio.get_running_loop().create_future()
        try:
            return await self._send(request, deadline, logprobs, probing)
        finally:
            probe, self.probe = self.probe, None
            if probe is not None and not probe.done():
                probe.set_result(None)

    async def _send(self, request: ChatRequest, deadline: float, logprobs: bool, probing: bool) -> Completion:
        try:
            await self._attempt_slot(deadline)
        except AttemptError as error:
            self._metrics.upstream_requests.labels(self.label, error.kind).inc()
            raise
        try:
            completion = await self._post(request, deadline, logprobs)
        except AttemptError as error:
            self._metrics.upstream_requests.labels(self.label, error.kind).inc()
            self._failed(error, probing)
            raise
        finally:
            self._slots.release()
        self._ok.inc()
        self._succeeded()
        return completion

    async def _attempt_slot(self, deadline: float) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # free slot: no timer needed
            return
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise AttemptError(
                "no_slot",
                f"all {self.settings.max_concurrency} slots busy until the deadline",
                retry_same=False,
                counts=False,
            ) from exc

    async def _post(self, request: ChatRequest, deadline: float, logprobs: bool) -> Completion:
        estimate = request.estimated_tokens
        try:
            waited = await self._limiter.acquire(estimate, deadline - MIN_ATTEMPT_S)
        except RateLimitTimeoutError as exc:
            raise AttemptError(
                "rate_limited", f"rpm/tpm limit: {exc}", retry_same=False, counts=False
            ) from exc
        if waited:
            self._metrics.ratelimit_wait.observe(waited)
        timeout = min(self.settings.attempt_timeout_s, deadline - time.monotonic())
        if timeout <= 0:
            raise AttemptError("timeout", "no time left for an attempt", counts=False)
        body = orjson.dumps(request.body(self.settings.model, logprobs))
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout), self.client.post(self._url, data=body) as response:
                status, headers, payload = response.status, response.headers, await response.read()
        except TimeoutError as exc:
            await self._limiter.settle(-estimate)  # nothing was (visibly) generated
            raise AttemptError("timeout", f"no answer within {timeout:.2f}s") from exc
        except aiohttp.ClientError as exc:
            await self._limiter.settle(-estimate)
            raise AttemptError("connect", f"{type(exc).__name__}: {exc or 'transport error'}") from exc
        finally:
            self._latency.observe(time.monotonic() - started)
        latency = time.monotonic() - started
        if status != 200:
            raise self._status_error(status, headers, payload)
        return await self._completion(payload, estimate, latency)

    @staticmethod
    def _status_error(code: int, headers: Mapping[str, str], payload: bytes) -> AttemptError:
        excerpt = " ".join(payload[:200].decode("utf-8", "replace").split())
        message = f"HTTP {code}" + (f": {excerpt}" if excerpt else "")
        if code == 429:
            return AttemptError("http_429", message, retry_after=retry_after_seconds(headers))
        if code >= 500 or code in (408, 409):
            return AttemptError("http_5xx", message, retry_after=retry_after_seconds(headers))
        if code == 413 or (code in (400, 422) and _TOO_LARGE.search(excerpt_of(payload))):
            # The request is too large for this model (an overlong response): no sign of ill health,
            # so it does not count toward the cooldown; another upstream may have a larger context.
            return AttemptError("too_large", message, retry_same=False, counts=False, rejected=True)
        if code in (400, 403, 422) and _FILTERED.search(excerpt_of(payload)):
            # A content filter refused what the response says: that sample's verdict, never a sign
            # of the upstream's ill health (a response must not be able to pause the judge).
            return AttemptError("content_filter", message, retry_same=False, counts=False, rejected=True)
        # 400/401/403/404/422: this upstream will answer the same again; another one may not.
        return AttemptError("http_4xx", message, retry_same=False)

    async def _completion(self, payload: bytes, estimate: int, latency: float) -> Completion:
        try:
            data = orjson.loads(payload)
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content")
            refusal = message.get("refusal")
            if text is not None and not isinstance(text, str):
                raise TypeError("message.content is not a string")
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise AttemptError("malformed", f"not a chat completion ({type(exc).__name__}: {exc})") from exc
        await self._limiter.settle(prompt_tokens + completion_tokens - estimate if usage else 0)
        cost = (
            prompt_tokens * self.settings.input_price_per_mtok
            + completion_tokens * self.settings.output_price_per_mtok
        ) / 1e6
        self._prompt_tokens.inc(prompt_tokens)
        self._completion_tokens.inc(completion_tokens)
        if cost:
            self._cost.inc(cost)
        return Completion(
            text=text or "",
            finish_reason=choice.get("finish_reason"),
            refusal=refusal if isinstance(refusal, str) and refusal else None,
            logprobs=_logprobs(choice),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            upstream=self.label,
            model=self.settings.model,
            latency_s=latency,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        await self._limiter.aclose()


class UpstreamPool:
    """The upstreams in order of preference, and the one retry loop over them."""

    def __init__(self, upstreams: list[Upstream], retry: RetrySettings, metrics: JudgeMetrics) -> None:
        self.upstreams = upstreams
        self._retry = retry
        self._metrics = metrics

    @property
    def primary_model(self) -> str:
        return self.upstreams[0].settings.model if self.upstreams else ""

    async def complete(self, request: ChatRequest, deadline: float, logprobs: bool) -> Completion:
        if not self.upstreams:
            raise UpstreamError(NO_UPSTREAM, attempts=0)
        errors: list[str] = []
        attempts = 0
        rejections = 0
        last_kind = ""
        excluded: set[int] = set()
        round_no = 0
        while True:
            for index, upstream in enumerate(self.upstreams):
                if attempts >= self._retry.max_attempts or index in excluded:
                    continue
                now = time.monotonic()
                if deadline - now < MIN_ATTEMPT_S:
                    raise self._failure(errors, attempts, timed_out=True)
                probing = False
                if upstream.cooling(now):
                    # Paused by its breaker: when no other upstream can take the call, test it
                    # (half-open) rather than fail every sample for the whole pause.
                    if not (upstream.probe_ready(now) and self._nowhere_else(index, excluded, now)):
                        continue
                    probing = True
                if attempts:
                    self._metrics.retries.labels(upstream.label, last_kind).inc()
                attempts += 1
                try:
                    completion = await upstream.send(
                        request, deadline, logprobs and upstream.settings.supports_logprobs, probing
                    )
                except AttemptError as error:
                    errors.append(f"{upstream.label}: {error}")
                    last_kind = error.kind
                    rejections += int(error.rejected)
                    if not error.retry_same:
                        excluded.add(index)
                    continue
                completion.attempts = attempts
                if index > 0:
                    self._metrics.fallbacks.inc()
                return completion
            if attempts >= self._retry.max_attempts or len(excluded) == len(self.upstreams):
                failure = self._failure(errors, attempts, timed_out=last_kind in _TIME_KINDS)
                failure.rejected = bool(attempts) and rejections == attempts
                raise failure
            await self._pause(round_no, deadline, errors, attempts, excluded, last_kind)
            round_no += 1

    async def _pause(
        self,
        round_no: int,
        deadline: float,
        errors: list[str],
        attempts: int,
        excluded: set[int],
        last_kind: str,
    ) -> None:
        """Back off before the next round; wait out cooldowns; never past the deadline."""
        now = time.monotonic()
        delay = random.uniform(0.0, min(self._retry.backoff_max_s, self._retry.backoff_base_s * 2**round_no))
        usable = [u for i, u in enumerate(self.upstreams) if i not in excluded]
        probes = [u.probe for u in usable if u.probe is not None]
        if probes and all(u.cooling(now) for u in usable):
            # A probe is testing a paused upstream: its outcome decides, not the pause's end.
            remaining = deadline - MIN_ATTEMPT_S - now
            if remaining <= 0:
                raise self._failure(errors, attempts, timed_out=True)
            await asyncio.wait(probes, timeout=remaining)
            if all(u.cooling(time.monotonic()) for u in usable):
                # The probe answered for every call waiting on it: the upstream is still down. Waiting
                # for the next probe's turn would hold each of them to its deadline (a batch of n
                # samples, one probe per probe_interval_s, every one of them a TIMEOUT).
                errors.append("the upstream's half-open probe failed: still paused")
                raise self._failure(errors, attempts, timed_out=False)
            return
        # While paused, a call waits only for the pause's end (never for a probe's turn: fail fast).
        ready_at = min(u.cooling_until for u in usable)
        delay = max(delay, ready_at - now)
        if now + delay > deadline - MIN_ATTEMPT_S:
            if ready_at - now > deadline - now:
                errors.append(f"every upstream cooling down or rate limited for {ready_at - now:.1f}s more")
            # Out of time: a TIMEOUT when time is what the upstreams lacked, else their errors.
            raise self._failure(errors, attempts, timed_out=last_kind in _TIME_KINDS or not errors)
        await asyncio.sleep(delay)

    def _nowhere_else(self, index: int, excluded: set[int], now: float) -> bool:
        """Every other upstream this call may use is paused too (or there is no other)."""
        return all(u.cooling(now) for i, u in enumerate(self.upstreams) if i != index and i not in excluded)

    def _failure(self, errors: list[str], attempts: int, timed_out: bool) -> UpstreamError:
        if not errors:
            reason = "every upstream is cooling down" if not timed_out else "the budget ran out"
        else:
            reason = "; ".join(errors[-4:])
        if timed_out:
            what = "no verdict within the budget"
        else:
            what = f"{attempts} attempt(s) failed" if attempts else "no upstream available"
        return UpstreamError(f"judge upstream: {what}: {reason}"[:600], attempts, timed_out=timed_out)

    async def aclose(self) -> None:
        await asyncio.gather(*(upstream.aclose() for upstream in self.upstreams))
