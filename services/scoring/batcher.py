"""Micro-batcher: coalesces concurrent single requests into grader batches.

OpenRLHF sends one sample per request, thousands at once; graders (a model forward,
a process pool) are far cheaper per sample in batches. The batcher takes a slot
(at most `max_concurrent_batches` batches in flight) before it forms a batch, so
while the grader is busy the queue grows and the next batch is larger: batch size
adapts to load, and an idle server adds at most `max_wait_ms` of latency. With `max_wait_ms: 0`
(the judge: batching saves nothing on its upstream calls) a sample that finds a slot free and
nobody queued starts its batch at once, in submit.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from services.common.metrics import KitMetrics
from services.common.settings import BatchSettings

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)


class QueueFullError(Exception):
    """The bounded queue is full: shed the request (status OVERLOADED)."""


class DeadlineExceededError(Exception):
    """The item's deadline passed before a batch picked it up."""


class BatcherClosedError(Exception):
    """The batcher is stopping and will take no more work."""


@dataclass(slots=True)
class _Item(Generic[T, R]):
    value: T
    future: asyncio.Future[R]
    deadline: float
    enqueued: float = field(default_factory=time.monotonic)


class MicroBatcher(Generic[T, R]):
    def __init__(
        self,
        process: Callable[[list[T]], Awaitable[list[R]]],
        settings: BatchSettings,
        metrics: KitMetrics | None = None,
    ) -> None:
        self._process = process
        self._settings = settings
        self._metrics = metrics
        self._queue: collections.deque[_Item[T, R]] = collections.deque()
        self._not_empty = asyncio.Event()
        self._full = asyncio.Event()
        self._free = settings.max_concurrent_batches  # batch slots not taken
        self._freed = asyncio.Event()
        self._idle = False  # the loop holds a slot and waits for work
        self._tasks: set[asyncio.Task[None]] = set()
        self._worker: asyncio.Task[None] | None = None
        self._closed = False

    def __len__(self) -> int:
        return len(self._queue)

    async def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.create_task(self._run(), name="micro-batcher")

    def submit(self, value: T, deadline: float) -> asyncio.Future[R]:
        """Queue one item; `deadline` is a time.monotonic() instant. Never blocks."""
        if self._closed:
            raise BatcherClosedError("server is shutting down")
        if len(self._queue) >= self._settings.max_queue:
            raise QueueFullError(f"queue full ({self._settings.max_queue} samples waiting)")
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        item = _Item(value, future, deadline)
        direct = self._settings.max_wait_ms <= 0 and self._idle and self._free and not self._queue
        if direct and deadline > time.monotonic():  # a late sample queues, and fails there
            # A batcher that never waits to fill a batch, its loop idle with a slot of its own and
            # another slot free, nothing queued: the sample's batch starts now rather than on the
            # loop's next turn (a judge's every sample: a wake-up and a queue hop less). The first
            # samples of a many-sample request each start alone this way; with one slot (the
            # loop's) every sample queues. A grader that gains from batches keeps max_wait_ms > 0.
            self._free -= 1
            if self._metrics is not None:
                self._metrics.queue_wait.observe(0.0)
            self._start([item])
            return future
        self._queue.append(item)
        self._not_empty.set()
        if len(self._queue) >= self._settings.max_batch_size:
            self._full.set()
        if self._metrics is not None:
            self._metrics.queue_depth.set(len(self._queue))
        return future

    async def _run(self) -> None:
        max_wait = self._settings.max_wait_ms / 1000.0
        while True:
            while not self._free:
                self._freed.clear()
                await self._freed.wait()
            self._free -= 1
            try:
                self._idle = True
                try:
                    await self._not_empty.wait()
                finally:
                    self._idle = False
                if len(self._queue) < self._settings.max_batch_size and max_wait > 0:
                    oldest = self._queue[0].enqueued
                    remaining = oldest + max_wait - time.monotonic()
                    if remaining > 0:
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(remaining):
                                await self._full.wait()
                batch = self._take_batch()
            except BaseException:
                self._release()
                raise
            if not batch:
                self._release()
                continue
            self._start(batch)

    def _start(self, batch: list[_Item[T, R]]) -> None:
        """Run `batch` in a task of its own; its slot (taken) comes back when the task ends,
        however it ends (cancelled before its first step too)."""
        task = asyncio.create_task(self._run_batch(batch))
        self._tasks.add(task)
        task.add_done_callback(self._batch_done)
        self._cancel_when_abandoned(batch, task)

    def _batch_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._release()

    def _release(self) -> None:
        self._free += 1
        self._freed.set()

    @staticmethod
    def _cancel_when_abandoned(batch: list[_Item[T, R]], task: asyncio.Task[None]) -> None:
        """Cancel the batch's work once every item's future is cancelled (nobody waits for any of
        its samples: callers that hung up): a judge's upstream call or a sandbox run stops there
        instead of holding its slot until the deadline."""
        left = [len(batch)]

        def done(future: asyncio.Future[R]) -> None:
            if future.cancelled():
                left[0] -= 1
                if left[0] == 0 and not task.done():
                    task.cancel()

        for item in batch:
            item.future.add_done_callback(done)

    def _take_batch(self) -> list[_Item[T, R]]:
        now = time.monotonic()
        batch: list[_Item[T, R]] = []
        while self._queue and len(batch) < self._settings.max_batch_size:
            item = self._queue.popleft()
            if item.future.done():  # the caller gave up already
                continue
            if item.deadline <= now:
                item.future.set_exception(DeadlineExceededError("deadline passed while queued"))
                continue
            batch.append(item)
        if not self._queue:
            self._not_empty.clear()
        if len(self._queue) < self._settings.max_batch_size:
            self._full.clear()
        if self._metrics is not None:
            self._metrics.queue_depth.set(len(self._queue))
            for item in batch:
                self._metrics.queue_wait.observe(now - item.enqueued)
        return batch

    async def _run_batch(self, batch: list[_Item[T, R]]) -> None:
        started = time.monotonic()
        try:
            results = await self._process([item.value for item in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"grader returned {len(results)} results for {len(batch)} samples")
        except BaseException as exc:  # every caller learns why, none waits forever
            if not isinstance(exc, asyncio.CancelledError):
                log.exception("batch of %d failed", len(batch))
            error = exc if isinstance(exc, Exception) else BatcherClosedError("batch cancelled")
            for item in batch:
                if not item.future.done():
                    item.future.set_exception(error)
            if isinstance(exc, asyncio.CancelledError) and all(item.future.cancelled() for item in batch):
                return  # abandoned by every caller (_cancel_when_abandoned): nothing to report
            if not isinstance(exc, Exception):
                raise
        else:
            for item, result in zip(batch, results, strict=True):
                if not item.future.done():
                    item.future.set_result(result)
        finally:
            if self._metrics is not None:
                self._metrics.batch_size.observe(len(batch))
                self._metrics.batch_latency.observe(time.monotonic() - started)

    async def stop(self, drain_timeout_s: float = 5.0) -> None:
        """Stop taking work, let batches in flight finish, fail whatever is left."""
        self._closed = True
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=drain_timeout_s)
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        for task in list(self._tasks):
            task.cancel()
        while self._queue:
            item = self._queue.popleft()
            if not item.future.done():
                item.future.set_exception(BatcherClosedError("server is shutting down"))
