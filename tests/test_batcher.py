"""The micro-batcher on its own: batch bounds, waiting, deadlines, shedding, shutdown."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.common.settings import BatchSettings
from services.scoring.batcher import BatcherClosedError, DeadlineExceededError, MicroBatcher, QueueFullError


class Recorder:
    def __init__(self, delay_s: float = 0.0, fail_on: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.delay_s = delay_s
        self.fail_on = fail_on

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_on is not None and self.fail_on in items:
            raise ValueError(f"bad item {self.fail_on}")
        return [i * 10 for i in items]


def far() -> float:
    return time.monotonic() + 30


async def test_coalesces_concurrent_items_up_to_max_batch_size() -> None:
    recorder = Recorder(delay_s=0.01)
    batcher = MicroBatcher(
        recorder, BatchSettings(max_batch_size=16, max_wait_ms=20, max_concurrent_batches=1)
    )
    await batcher.start()
    futures = [batcher.submit(i, far()) for i in range(100)]
    assert await asyncio.gather(*futures) == [i * 10 for i in range(100)]
    await batcher.stop()
    assert max(len(b) for b in recorder.batches) == 16
    assert len(recorder.batches) < 100
    assert sorted(i for b in recorder.batches for i in b) == list(range(100))  # each exactly once


async def test_a_lone_item_waits_at_most_max_wait() -> None:
    recorder = Recorder()
    batcher = MicroBatcher(recorder, BatchSettings(max_batch_size=64, max_wait_ms=50))
    await batcher.start()
    started = time.monotonic()
    assert await batcher.submit(7, far()) == 70
    waited = time.monotonic() - started
    await batcher.stop()
    assert recorder.batches == [[7]]
    assert waited < 5.0  # generous: it must not wait for a batch that never fills


class Gauge:
    """A grader that records how many of its batches run at once."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0.02)
        self.running -= 1
        return [i * 10 for i in items]


async def test_without_a_wait_a_free_slot_starts_the_batch_at_once_and_the_bound_holds() -> None:
    gauge = Gauge()
    batcher = MicroBatcher(gauge, BatchSettings(max_batch_size=8, max_wait_ms=0, max_concurrent_batches=3))
    await batcher.start()
    await asyncio.sleep(0)  # the loop takes its slot and waits for work
    # The loop holds one slot while it waits for work: two samples start alone, at submit time,
    # the rest queue and go in batches as slots free up, in order.
    futures = [batcher.submit(i, far()) for i in range(20)]
    assert gauge.batches == []  # started, not yet run: the batch tasks run on the loop's next turn
    assert len(batcher) == 18
    assert await asyncio.gather(*futures) == [i * 10 for i in range(20)]
    await batcher.stop()
    assert gauge.peak <= 3
    assert gauge.batches[:2] == [[0], [1]]
    assert [i for b in gauge.batches[2:] for i in b] == list(range(2, 20))  # FIFO behind them
    assert max(len(b) for b in gauge.batches) > 1  # busy slots: the queue formed batches


async def test_a_batcher_that_waits_to_fill_batches_never_starts_one_at_submit() -> None:
    gauge = Gauge()
    batcher = MicroBatcher(gauge, BatchSettings(max_batch_size=8, max_wait_ms=30, max_concurrent_batches=3))
    await batcher.start()
    futures = [batcher.submit(i, far()) for i in range(5)]
    assert len(batcher) == 5
    assert await asyncio.gather(*futures) == [i * 10 for i in range(5)]
    await batcher.stop()
    assert gauge.batches == [[0, 1, 2, 3, 4]]


async def test_expired_items_are_not_processed() -> None:
    recorder = Recorder(delay_s=0.2)
    batcher = MicroBatcher(recorder, BatchSettings(max_batch_size=1, max_wait_ms=0, max_concurrent_batches=1))
    await batcher.start()
    first = batcher.submit(1, far())
    second = batcher.submit(2, time.monotonic() + 0.05)  # expires while the first runs
    assert await first == 10
    with pytest.raises(DeadlineExceededError):
        await second
    await batcher.stop()
    assert recorder.batches == [[1]]


async def test_cancelled_callers_are_skipped() -> None:
    recorder = Recorder(delay_s=0.1)
    batcher = MicroBatcher(recorder, BatchSettings(max_batch_size=1, max_wait_ms=0, max_concurrent_batches=1))
    await batcher.start()
    first = batcher.submit(1, far())
    gone = batcher.submit(2, far())
    gone.cancel()
    assert await first == 10
    assert await batcher.submit(3, far()) == 30
    await batcher.stop()
    assert [1] in recorder.batches and [2] not in recorder.batches


async def test_full_queue_sheds_instead_of_growing() -> None:
    batcher = MicroBatcher(Recorder(), BatchSettings(max_queue=3))
    # not started: nothing drains the queue
    for i in range(3):
        batcher.submit(i, far())
    with pytest.raises(QueueFullError):
        batcher.submit(99, far())
    await batcher.stop()


async def test_a_failing_batch_fails_its_callers_and_the_next_batch_runs() -> None:
    recorder = Recorder(fail_on=3)
    batcher = MicroBatcher(recorder, BatchSettings(max_batch_size=4, max_wait_ms=20))
    await batcher.start()
    bad = [batcher.submit(i, far()) for i in range(4)]
    results = await asyncio.gather(*bad, return_exceptions=True)
    assert all(isinstance(r, ValueError) for r in results)
    assert await batcher.submit(5, far()) == 50
    await batcher.stop()


async def test_stop_drains_in_flight_and_rejects_new_work() -> None:
    recorder = Recorder(delay_s=0.1)
    batcher = MicroBatcher(recorder, BatchSettings(max_batch_size=2, max_wait_ms=0, max_concurrent_batches=1))
    await batcher.start()
    futures = [batcher.submit(i, far()) for i in range(2)]
    await asyncio.sleep(0.02)
    await batcher.stop()
    assert [f.result() for f in futures] == [0, 10]
    with pytest.raises(BatcherClosedError):
        batcher.submit(9, far())


async def test_wrong_result_count_is_an_error_not_a_hang() -> None:
    async def short(items: list[int]) -> list[int]:
        return items[:-1]

    batcher = MicroBatcher(short, BatchSettings(max_batch_size=2, max_wait_ms=10))
    await batcher.start()
    results = await asyncio.gather(batcher.submit(1, far()), batcher.submit(2, far()), return_exceptions=True)
    await batcher.stop()
    assert all(isinstance(r, RuntimeError) for r in results)
