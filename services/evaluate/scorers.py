"""Where results come from: the grader in this process (the servers' engine) or a deployment."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.common.settings import EmergenceSettings
from services.evaluate.emergence_pool import EmergencePool
from services.scoring.engine import ScoringEngine

if TYPE_CHECKING:
    from arbiter.client import ArbiterClient

T = TypeVar("T")


class ScoringAborted(RuntimeError):
    """Scoring cannot go on (a deployment stays unreachable); what was written is kept for resuming."""


class Scorer(Protocol):
    @property
    def info(self) -> GraderInfo: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def score(self, samples: Sequence[Sample]) -> list[Result]: ...

    def invalid(self, detail: str) -> Result:
        """The result of a row that never became a sample."""
        ...


class EngineScorer:
    """The same ScoringEngine the servers run: batching, deadlines, fallbacks, emergence logs.

    A chunk goes to the engine one grader batch at a time, at most `max_concurrent_batches` at
    once, so every sample's deadline starts when the grader can take it: an eval set queued
    behind itself (a window of chunks, a slow code or judge grader) never times out waiting.
    The grader still sees as many batches at once as a server would give it.
    """

    def __init__(
        self, engine: ScoringEngine, emergence: EmergenceSettings, emergence_worker: bool = True
    ) -> None:
        """`engine` comes from `catalog.named_engine` (tests build their own); `emergence_worker=False`
        keeps the statistics in this process (a Ray actor: one per CPU already, and a process whose
        threads a fork must not copy)."""
        self.engine = engine
        self._batch = engine.server.batch.max_batch_size
        self._slots = asyncio.Semaphore(engine.server.batch.max_concurrent_batches)
        self._emergence = EmergencePool(emergence, engine.emergence, worker=emergence_worker)
        grader_keys = set(engine.grader.log_keys)
        self._emergence_keys = tuple(k for k in engine.emergence.keys if k not in grader_keys)

    @property
    def info(self) -> GraderInfo:
        return self.engine.info

    async def start(self) -> None:
        await self._emergence.start()  # first: it forks, and the grader may start threads
        await self.engine.start()

    async def stop(self) -> None:
        try:
            await self.engine.stop()
        finally:
            await self._emergence.stop()

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        parts = _parts(samples, self._batch)
        scored = await asyncio.gather(*(self._score_batch(part) for part in parts))
        return [result for part in scored for result in part]

    async def _score_batch(self, samples: Sequence[Sample]) -> list[Result]:
        stats = asyncio.ensure_future(self._emergence.compute(samples))  # while the grader grades
        try:
            async with self._slots:  # the deadline starts here, not while queued behind other chunks
                results = await self.engine.score(samples, emergence=False)
        except BaseException:
            stats.cancel()
            raise
        for result, numbers in zip(results, await stats, strict=True):
            # What the engine's own pass would have written: its emergence keys (at 0.0 without
            # it) take the statistics, unless the grader itself reports a key of that name.
            logs = result.logs
            for key in self._emergence_keys:
                logs[key] = numbers.get(key, 0.0)
        return results

    def invalid(self, detail: str) -> Result:
        return self.engine.finish_fallback(None, Status.INVALID_INPUT, detail)


def _parts(samples: Sequence[Sample], size: int) -> list[Sequence[Sample]]:
    """Batches of `size` samples, never cutting a run of one `group_id` (`--prompt-id-key`): a
    group-aware recipe gets the whole group in one call instead of holding half of it while the
    other half waits for a batch slot."""
    parts: list[Sequence[Sample]] = []
    start = 0
    for index in range(1, len(samples) + 1):
        group = samples[index - 1].metadata.get("group_id")
        at_end = index == len(samples)
        if at_end or (
            index - start >= size and (group is None or samples[index].metadata.get("group_id") != group)
        ):
            parts.append(samples[start:index])
            start = index
    return parts


def client_for(url: str, timeout_s: float = 120.0) -> ArbiterClient:
    """`grpc://host:port` speaks gRPC; anything else is the service's HTTP base URL."""
    from arbiter.client import ArbiterClient  # httpx and grpc load only to score remotely

    if url.startswith("grpc://"):
        return ArbiterClient(grpc_target=url.removeprefix("grpc://"), timeout_s=timeout_s)
    base = url.rstrip("/").removesuffix("/get_reward").removesuffix("/v1/score")
    return ArbiterClient(http_url=base, timeout_s=timeout_s)


class RemoteScorer:
    """A running deployment over /v1/score or gRPC, a batch per request, retried before giving up.

    A request that keeps failing aborts the run instead of writing fallback rows, so a restart
    scores those rows for real.
    """

    def __init__(self, url: str, attempts: int = 5, timeout_s: float = 120.0) -> None:
        self.url = url
        self.attempts = max(1, attempts)
        self.client = client_for(url, timeout_s)
        self._info: GraderInfo | None = None

    @property
    def info(self) -> GraderInfo:
        if self._info is None:
            raise RuntimeError("start() first")
        return self._info

    async def start(self) -> None:
        try:
            self._info = await self._retry(self.client.info)
        except ScoringAborted:
            await self.client.aclose()
            raise

    async def stop(self) -> None:
        await self.client.aclose()

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        if not samples:
            return []
        response = await self._retry(lambda: self.client.score(samples))
        if response.grader.config_hash != self.info.config_hash:
            raise ScoringAborted(
                f"{self.url} changed its reward mid-run (config {self.info.config_hash} -> "
                f"{response.grader.config_hash}); start a new output"
            )
        return response.results

    def invalid(self, detail: str) -> Result:
        return Result(reward=0.0, score=0.0, status=Status.INVALID_INPUT, detail=detail)

    async def _retry(self, call: Callable[[], Awaitable[T]]) -> T:
        error: Exception | None = None
        for attempt in range(self.attempts):
            try:
                return await call()
            except Exception as exc:  # ArbiterClientError, httpx / grpc transport errors, timeouts
                error = exc
            await asyncio.sleep(min(5.0, 0.5 * 2**attempt))
        raise ScoringAborted(f"{self.url} failed {self.attempts} times: {error}")
