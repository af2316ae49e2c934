"""The scoring pipeline every transport shares: cache -> dedupe -> micro-batcher -> grader.

Whatever happens below it, `ScoringEngine.score` returns one finite Result per sample
before the deadline: failures become the fallback reward with a non-OK status, a detail
and a `status/<name>` flag, never an exception or a silent zero.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.contract import (
    CACHED_KEY,
    NO_CACHE_KEY,
    RESERVED_LOG_KEYS,
    STATUS_KEYS,
    GraderInfo,
    Result,
    Sample,
    Status,
)
from services.common.metrics import KitMetrics, RegistryForwarder
from services.common.offload import maybe_off_loop, text_size
from services.common.settings import CacheSettings, EmergenceSettings, ServerSettings
from services.scoring.batcher import BatcherClosedError, DeadlineExceededError, MicroBatcher, QueueFullError
from services.scoring.cache import Cache, NullCache, cache_key, make_cache
from services.scoring.grader import (
    NONDETERMINISTIC,
    SAMPLE_DEADLINES,
    Grader,
    HasFailureReward,
    HasMetrics,
    Startable,
)
from services.textstats.emergence import EmergenceStats

log = logging.getLogger(__name__)

Observer = Callable[[Sequence[Sample], Sequence[Result]], None]


@dataclass(frozen=True, slots=True)
class _Job:
    """A sample on its way to the grader, with the instant (time.monotonic) its caller stops waiting."""

    sample: Sample
    deadline: float


@dataclass(slots=True)
class _Flight:
    """A sample's work in flight, shared by every caller waiting for an identical sample.

    `deadline` is the one its job was submitted with (the first caller's); `waiters` counts the
    callers still waiting: when the last one goes (a client that hung up), the work is cancelled.
    """

    future: asyncio.Future[Result]
    deadline: float
    waiters: int = 0


class ScoringEngine:
    def __init__(
        self,
        grader: Grader,
        server: ServerSettings,
        cache: Cache | None = None,
        emergence: EmergenceSettings | None = None,
        metrics: KitMetrics | None = None,
        observers: Sequence[Observer] = (),
    ) -> None:
        self.grader = grader
        self.observers = list(observers)
        self.server = server
        self.cache: Cache = cache if cache is not None else NullCache()
        self.metrics = metrics if metrics is not None else KitMetrics()
        emergence = emergence or EmergenceSettings()
        self.emergence = EmergenceStats(emergence)
        self.eos_markers: tuple[str, ...] = tuple(emergence.eos_markers)
        self.batcher: MicroBatcher[_Job, Result] = MicroBatcher(self._grade_batch, server.batch, self.metrics)
        self._inflight: dict[str, _Flight] = {}
        self._background: set[asyncio.Task[None]] = set()
        self.log_keys = self._all_log_keys()
        if isinstance(grader, HasMetrics):
            self.metrics.registry.register(RegistryForwarder(grader.metrics_registry))
        self._ready = False
        self._info_source: GraderInfo | None = None
        self._info_cache = self.grader.info

    def _all_log_keys(self) -> tuple[str, ...]:
        grader_keys = tuple(k for k in self.grader.log_keys if k not in RESERVED_LOG_KEYS)
        return (*grader_keys, *self.emergence.keys, *STATUS_KEYS.values(), CACHED_KEY, NO_CACHE_KEY)

    @property
    def info(self) -> GraderInfo:
        """The grader's identity, published with the log keys its results carry."""
        info = self.grader.info
        if info is not self._info_source:
            keys = info.log_keys or [k for k in self.grader.log_keys if k not in RESERVED_LOG_KEYS]
            self._info_cache = info.model_copy(update={"log_keys": list(keys)})
            self._info_source = info
        return self._info_cache

    @property
    def ready(self) -> bool:
        return self._ready

    async def start(self) -> None:
        if isinstance(self.grader, Startable):
            await self.grader.start()
            self.log_keys = self._all_log_keys()  # start-up may have taught the grader its keys
        await self.batcher.start()
        self._ready = True

    def release(self) -> None:
        """The server is stopping: requests held back on purpose (the gateway's group holds) are
        answered now, inside the transports' grace period. Nothing is held here."""

    async def stop(self) -> None:
        self._ready = False
        await self.batcher.stop()
        if self._background:
            await asyncio.wait(set(self._background), timeout=2.0)
        await self.cache.aclose()
        await self.grader.aclose()

    # -- the pipeline -------------------------------------------------------------------

    async def score(
        self, samples: Sequence[Sample], timeout_s: float | None = None, emergence: bool = True
    ) -> list[Result]:
        """One finite result per sample, in order, within the deadline.

        `emergence=False` skips the per-response statistics, for a caller in this process that
        composes the results and computes its own (the gateway).
        """
        started = time.monotonic()
        budget = min(timeout_s, self.server.deadline_s) if timeout_s else self.server.deadline_s
        deadline = started + budget
        info = self.info
        # A sampled grader (an LLM judge at temperature > 0) gets a fresh draw for every sample:
        # no cache, no sharing between identical samples in flight.
        shared = NONDETERMINISTIC not in info.capabilities
        size = text_size(samples)
        keys = await maybe_off_loop(size, _cache_keys, info, samples)  # hashing 28 MB: not on the loop
        hits = await self.cache.get_many(keys) if shared else [None] * len(samples)
        results: list[Result | None] = list(hits)
        hit_count = sum(1 for hit in hits if hit is not None)
        if hit_count:
            self.metrics.child(self.metrics.cache, "hit").inc(hit_count)
        if hit_count < len(hits):
            self.metrics.child(self.metrics.cache, "miss").inc(len(hits) - hit_count)
        flights: dict[int, _Flight] = {}
        fresh: list[tuple[str, Result]] = []
        try:
            for index, (key, hit) in enumerate(zip(keys, hits, strict=True)):
                if hit is None:
                    flight = self._board(samples[index], key if shared else None, deadline, results, index)
                    if flight is not None:
                        flights[index] = flight
            await self._wait(flights, samples, keys, shared, deadline, results)
            for index, flight in flights.items():
                result = self._outcome(flight.future, budget)
                results[index] = result
                if result.status is Status.OK and result.cacheable:
                    fresh.append((keys[index], result))
        finally:
            # Whoever still waits keeps the work; nobody left (past the deadline, or a caller that
            # hung up and cancelled this coroutine): it is cancelled rather than run to its deadline.
            for flight in flights.values():
                self._leave(flight)
        if fresh and shared:
            if self.cache.local:
                await self.cache.set_many(fresh)
            else:
                self._in_background(self.cache.set_many(fresh))
        # Emergence scans and the logs of every result: in a thread when the request is large (by
        # its total size: 4,000 samples of 7 KB are as much work as one of 28 MB).
        final = await maybe_off_loop(size, self._finish_all, samples, results, hits, emergence)
        for status, count in collections.Counter(r.status.value for r in final).items():
            self.metrics.child(self.metrics.samples, status).inc(count)
        for observe in self.observers:
            try:
                observe(samples, final)
            except Exception:  # an observer (stats, logging) never costs a reward
                log.exception("result observer failed")
        return final

    def _board(
        self, sample: Sample, key: str | None, deadline: float, results: list[Result | None], index: int
    ) -> _Flight | None:
        """Join the flight of an identical sample (`key`), or submit the sample; None: shed."""
        flight = self._inflight.get(key) if key is not None else None
        if flight is None or flight.future.done():
            try:
                future = self.batcher.submit(_Job(sample, deadline), deadline)
            except QueueFullError as exc:
                results[index] = self.fallback(Status.OVERLOADED, f"{exc}; retry later or add replicas")
                return None
            except BatcherClosedError as exc:
                results[index] = self.fallback(Status.OVERLOADED, str(exc))
                return None
            flight = _Flight(future, deadline)
            if key is not None:
                self._inflight[key] = flight
            future.add_done_callback(self._forget(key, flight))
        flight.waiters += 1
        return flight

    @staticmethod
    def _leave(flight: _Flight) -> None:
        flight.waiters -= 1
        if flight.waiters <= 0 and not flight.future.done():
            flight.future.cancel()  # queued: never batched; in a batch of only abandoned samples: cancelled

    async def _wait(
        self,
        flights: dict[int, _Flight],
        samples: Sequence[Sample],
        keys: Sequence[str],
        shared: bool,
        deadline: float,
        results: list[Result | None],
    ) -> None:
        """Wait for every flight until `deadline`. A flight joined from an earlier caller with an
        earlier deadline that ends in a timeout is this caller's too only if its own deadline has
        passed: with time left, the sample is submitted again under this caller's deadline."""
        while flights:
            waiting = {flight.future for flight in flights.values() if not flight.future.done()}
            if waiting:
                await asyncio.wait(waiting, timeout=max(0.0, deadline - time.monotonic()))
            again = [
                index
                for index, flight in flights.items()
                if flight.deadline < deadline and flight.future.done() and _timed_out(flight.future)
            ]
            if not again or time.monotonic() >= deadline - 0.01:
                return
            for index in again:
                self._leave(flights.pop(index))
                flight = self._board(
                    samples[index], keys[index] if shared else None, deadline, results, index
                )
                if flight is not None:
                    flights[index] = flight

    def fallback(self, status: Status, detail: str) -> Result:
        return Result(reward=self.failure_reward(), score=0.0, status=status, detail=detail)

    def failure_reward(self) -> float:
        """The configured fallback reward, or what the grader says a failure is worth."""
        if isinstance(self.grader, HasFailureReward):
            return self.grader.failure_reward(self.server.fallback_reward)
        return self.server.fallback_reward

    def finish_fallback(self, sample: Sample | None, status: Status, detail: str) -> Result:
        """A fallback result for a sample that never reached the pipeline, with full logs."""
        stats = None
        if sample is not None:
            stats = self.emergence.compute(sample.response, sample.metadata.get("finish_reason"))
        return self._finish(self.fallback(status, detail), cached=False, stats=stats)

    async def grade(self, samples: Sequence[Sample], timeout_s: float) -> list[Result]:
        """The grader's own results, for a caller in this process that caches, batches and
        attaches logs itself (the gateway's in-process components): one pass through the kit
        instead of two. A failed batch is isolated per sample as in `score`; past the deadline a
        sample gets TIMEOUT. No cache, no dedupe, no micro-batch wait, no emergence logs.
        """
        if not samples:
            return []
        deadline = time.monotonic() + min(timeout_s, self.server.deadline_s)
        try:
            return await self._grade_batch([_Job(sample, deadline) for sample in samples])
        except Exception as exc:
            if time.monotonic() >= deadline or isinstance(exc, TimeoutError):
                failed = self.fallback(Status.TIMEOUT, f"no verdict within the {timeout_s:g}s deadline")
            else:
                failed = self.fallback(Status.GRADER_ERROR, _describe(exc))
            return [failed] * len(samples)

    # -- helpers ------------------------------------------------------------------------

    async def _grade_batch(self, jobs: list[_Job]) -> list[Result]:
        """Grade a batch; when it fails as a whole, grade its samples apart to isolate the culprit.

        A batch mixes concurrent requests, so one sample's failure must not become its neighbours':
        the samples are re-graded concurrently (one slow sample does not queue the others behind
        it), each within its own caller's deadline, and only the culprit gets GRADER_ERROR.
        """
        latest = max(job.deadline for job in jobs)
        try:
            return await self._call_grader(
                [job.sample for job in jobs], latest, [job.deadline for job in jobs]
            )
        except Exception:
            if len(jobs) == 1 or time.monotonic() >= latest:
                raise  # every caller's deadline has passed: nothing is left to re-grade
        return list(await asyncio.gather(*(self._grade_alone(job) for job in jobs)))

    async def _grade_alone(self, job: _Job) -> Result:
        if job.deadline <= time.monotonic():
            return self.fallback(Status.TIMEOUT, "deadline passed before the sample could be re-graded alone")
        try:
            return (await self._call_grader([job.sample], job.deadline))[0]
        except TimeoutError:
            return self.fallback(Status.TIMEOUT, "no verdict within the deadline (re-graded alone)")
        except Exception as exc:
            return self.fallback(Status.GRADER_ERROR, _describe(exc))

    async def _call_grader(
        self, samples: list[Sample], deadline: float, deadlines: Sequence[float] | None = None
    ) -> list[Result]:
        remaining = max(0.0, deadline - time.monotonic())
        token = SAMPLE_DEADLINES.set(
            tuple(deadlines) if deadlines is not None else (deadline,) * len(samples)
        )
        try:
            async with asyncio.timeout(remaining):  # not wait_for: no task of its own per batch
                results = await self.grader.score(samples)
        finally:
            SAMPLE_DEADLINES.reset(token)
        if len(results) != len(samples):
            raise RuntimeError(f"grader returned {len(results)} results for {len(samples)} samples")
        return results

    def _finish_all(
        self,
        samples: Sequence[Sample],
        results: Sequence[Result | None],
        hits: Sequence[Result | None],
        emergence: bool,
    ) -> list[Result]:
        """Every sample's final result, with its emergence logs (unless `emergence` is off)."""
        return [
            self._finish(
                result if result is not None else self.fallback(Status.GRADER_ERROR, "no result"),
                cached=hit is not None,
                stats=self.emergence.compute(sample.response, sample.metadata.get("finish_reason"))
                if emergence
                else None,
            )
            for sample, result, hit in zip(samples, results, hits, strict=True)
        ]

    def _outcome(self, future: asyncio.Future[Result], budget: float) -> Result:
        if not future.done():
            return self.fallback(Status.TIMEOUT, f"no verdict within the {budget:g}s deadline")
        if future.cancelled():
            return self.fallback(Status.GRADER_ERROR, "grading was cancelled")
        exc = future.exception()
        if exc is None:
            return future.result()
        if isinstance(exc, DeadlineExceededError | TimeoutError):
            return self.fallback(Status.TIMEOUT, f"no verdict within the {budget:g}s deadline ({exc})")
        if isinstance(exc, BatcherClosedError):
            return self.fallback(Status.OVERLOADED, str(exc))
        return self.fallback(Status.GRADER_ERROR, _describe(exc))

    def _finish(self, result: Result, cached: bool, stats: dict[str, float] | None) -> Result:
        """Attach the logs every sample carries: grader keys, emergence `stats`, status flags."""
        logs = dict.fromkeys(self.log_keys, 0.0)
        if stats is not None:
            logs.update(stats)
        logs.update({k: v for k, v in result.logs.items() if math.isfinite(v)})
        logs[STATUS_KEYS[result.status]] = 1.0
        logs[CACHED_KEY] = 1.0 if cached else 0.0
        if result.status is not Status.OK:  # one fallback rule for every failure, whoever reports it
            return result.model_copy(update={"logs": logs, "reward": self.failure_reward(), "score": 0.0})
        return result.model_copy(update={"logs": logs})

    def _forget(self, key: str | None, flight: _Flight) -> Callable[[asyncio.Future[Result]], None]:
        def done(future: asyncio.Future[Result]) -> None:
            if key is not None and self._inflight.get(key) is flight:
                del self._inflight[key]
            if not future.cancelled():
                future.exception()  # retrieved: no "never retrieved" noise for abandoned work

        return done

    def _in_background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _cache_keys(info: GraderInfo, samples: Sequence[Sample]) -> list[str]:
    return [cache_key(info, sample) for sample in samples]


def _timed_out(future: asyncio.Future[Result]) -> bool:
    """Whether a finished flight ended for want of time (its own deadline), not for its sample."""
    if future.cancelled():
        return False
    exc = future.exception()
    if exc is not None:
        return isinstance(exc, DeadlineExceededError | TimeoutError)
    return future.result().status is Status.TIMEOUT


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no message'}"[:500]


def assemble_engine(
    grader: Grader,
    server: ServerSettings,
    cache: CacheSettings | None = None,
    emergence: EmergenceSettings | None = None,
    *,
    metrics: KitMetrics | None = None,
    observers: Sequence[Observer] = (),
    engine_type: type[ScoringEngine] = ScoringEngine,
) -> ScoringEngine:
    """The one place an engine is put together from settings: a served grader (GraderServer),
    a composing service's in-process graders, the eval tool and Ray Serve replicas
    (services/catalog.make_engine) all take theirs from here, so they cannot drift apart."""
    return engine_type(
        grader,
        server,
        cache=make_cache(cache or CacheSettings()),
        emergence=emergence,
        metrics=metrics,
        observers=observers,
    )
