"""Judge-call cache: verdicts keyed by what the judge was asked, with single flight.

The kit's result cache keys whole samples; this one keys a judge *request* (model, fully
rendered messages, every sampling parameter, the parse spec and parser version), so two
different samples that render the same request share one verdict, and a `multi` rubric
re-asked after a partial failure re-pays only the calls that failed. Storage is the kit's
Cache (memory or Redis); a verdict travels in a Result (value in `reward`, the rest in
`detail`). Only successful verdicts are stored; identical calls in flight share one upstream
request, each waiter bounded by its own deadline.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from arbiter.contract import Result
from services.judge_proxy.metrics import JudgeMetrics
from services.judge_proxy.upstream import ChatRequest, UpstreamError
from services.scoring.cache import Cache

KEY_SCHEME = "arbiter:judge:v1"
Source = Literal["upstream", "cache", "coalesced"]


@dataclass(frozen=True, slots=True)
class Verdict:
    value: float  # on the rubric's own scale (a score, or the chosen label's value)
    text: str  # the verdict as the judge wrote it ("8", "CORRECT")
    weighted: bool  # value is a logprob-weighted expectation
    primary: bool = True  # the primary judge said it (only such verdicts are stored)

    def to_result(self) -> Result:
        return Result(reward=self.value, score=float(self.weighted), detail=self.text)

    @classmethod
    def from_result(cls, result: Result) -> Verdict:
        return cls(value=result.reward, text=result.detail, weighted=result.score > 0)


def request_key(model: str, request: ChatRequest, spec: tuple[Any, ...]) -> str:
    canonical = orjson.dumps(
        [model, [list(m) for m in request.messages], [list(p) for p in request.params], list(spec)],
        option=orjson.OPT_SORT_KEYS,
    )
    return f"{KEY_SCHEME}:{hashlib.sha256(canonical).hexdigest()}"


class JudgeCache:
    def __init__(self, store: Cache, metrics: JudgeMetrics) -> None:
        self.store = store
        self._lookups = {
            result: metrics.cache.labels(result) for result in ("bypass", "coalesced", "hit", "miss")
        }
        self._inflight: dict[str, asyncio.Future[Verdict]] = {}

    async def call(
        self,
        key: str | None,
        deadline: float,
        produce: Callable[[], Awaitable[tuple[Verdict, bool]]],
    ) -> tuple[Verdict, Source]:
        """The verdict for `key`: from the cache, from an identical call in flight, or `produce()`.

        `produce` returns the verdict and whether it may be stored; `key=None` bypasses all of it.
        """
        if key is None:
            self._lookups["bypass"].inc()
            verdict, _ = await produce()
            return verdict, "upstream"
        while (shared := self._inflight.get(key)) is not None:
            self._lookups["coalesced"].inc()
            try:
                return await self._join(shared, deadline), "coalesced"
            except Exception as exc:
                # The call this one joined ended with its own caller's deadline (or was cancelled,
                # nobody waiting for it): a caller with time left asks for itself.
                if not _out_of_time(exc) or deadline - time.monotonic() <= _RETRY_MARGIN_S:
                    raise
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        self._inflight[key] = future
        try:
            hit = (await self.store.get_many([key]))[0]
            if hit is not None:
                verdict = Verdict.from_result(hit)
                self._lookups["hit"].inc()
                future.set_result(verdict)
                return verdict, "cache"
            self._lookups["miss"].inc()
            verdict, storable = await produce()
            if storable:
                await self.store.set_many([(key, verdict.to_result())])
            future.set_result(verdict)
            return verdict, "upstream"
        except BaseException as exc:  # waiters learn the same failure; nothing is stored
            if not future.done():
                future.set_exception(
                    exc
                    if isinstance(exc, Exception)
                    else UpstreamError("the judge call was cancelled", 0, timed_out=True)
                )
            raise
        finally:
            self._inflight.pop(key, None)

    @staticmethod
    async def _join(shared: asyncio.Future[Verdict], deadline: float) -> Verdict:
        try:
            return await asyncio.wait_for(asyncio.shield(shared), max(0.0, deadline - time.monotonic()))
        except TimeoutError as exc:
            raise UpstreamError(
                "judge upstream: no verdict within the budget (waiting on an identical call in flight)",
                attempts=0,
                timed_out=True,
            ) from exc

    async def aclose(self) -> None:
        await self.store.aclose()


_RETRY_MARGIN_S = 0.05


def _out_of_time(exc: BaseException) -> bool:
    """A failure of time, not of the judge: the producing caller's deadline passed."""
    return bool(getattr(exc, "timed_out", False)) or str(getattr(exc, "status", "")) == "TIMEOUT"


def _retrieve(future: asyncio.Future[Verdict]) -> None:
    if not future.cancelled():
        future.exception()  # no "exception never retrieved" noise when nobody joined
