"""/run_code's scheduling (fusion_slots.FairSlots): bounded slots, bounded queues, callers in turn,
a caller's cap, and a wait that ends (timeout, cancellation) leaving nothing held. Pure asyncio."""

from __future__ import annotations

import asyncio

import pytest

from services.reward_rules.code.fusion_slots import FairSlots, Overloaded


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_freed_slots_go_to_callers_in_turn() -> None:
    slots = FairSlots(slots=1, per_caller=0, max_waiting=10, max_waiting_per_caller=0)
    await slots.acquire("a", 1)
    order: list[str] = []

    async def one(caller: str) -> None:
        await slots.acquire(caller, 60)
        order.append(caller)

    tasks = [asyncio.ensure_future(one(c)) for c in ["a", "a", "a", "b", "c"]]
    await _settle()
    assert slots.queued == 5 and slots.busy == 1
    for _ in range(5):
        slots.release(order[-1] if order else "a")
        await _settle()
    await asyncio.gather(*tasks)
    assert order == ["a", "b", "c", "a", "a"]  # b and c did not wait behind a's burst
    slots.release("a")
    assert slots.busy == 0 and slots.queued == 0


async def test_a_caller_holds_at_most_its_cap() -> None:
    slots = FairSlots(slots=3, per_caller=2, max_waiting=10, max_waiting_per_caller=0)
    await slots.acquire("a", 1)
    await slots.acquire("a", 1)
    third = asyncio.ensure_future(slots.acquire("a", 60))
    await _settle()
    assert not third.done()  # a free slot, but not for a third run of a
    await slots.acquire("b", 1)  # b takes it at once
    assert slots.busy == 3
    slots.release("a")
    await asyncio.wait_for(third, 5)
    assert slots.running["a"] == 2


async def test_queues_are_bounded_in_all_and_per_caller() -> None:
    slots = FairSlots(slots=1, per_caller=0, max_waiting=3, max_waiting_per_caller=2)
    await slots.acquire("a", 1)
    waiting = [asyncio.ensure_future(slots.acquire("a", 60)) for _ in range(2)]
    await _settle()
    with pytest.raises(Overloaded):
        await slots.acquire("a", 60)  # a's queue is full
    other = asyncio.ensure_future(slots.acquire("b", 60))  # b still has room
    await _settle()
    assert slots.queued == 3
    late = asyncio.ensure_future(slots.acquire("c", 60))  # the queue is full: a, with the most, gives one up
    await _settle()
    assert slots.queued == 3 and not late.done()
    with pytest.raises(Overloaded):
        await waiting[1]  # a's newest, refused as if it had found the queue full
    with pytest.raises(Overloaded):
        await slots.acquire("d", 60)  # the whole queue is full, and no caller holds more than its share
    for task in [waiting[0], other, late]:
        task.cancel()
    await asyncio.gather(waiting[0], other, late, return_exceptions=True)
    assert slots.queued == 0 and slots.busy == 1


async def test_one_caller_s_flood_cannot_keep_another_out_of_the_queue() -> None:
    slots = FairSlots(slots=1, per_caller=0, max_waiting=4, max_waiting_per_caller=0)
    await slots.acquire("a", 1)
    flood = [asyncio.ensure_future(slots.acquire("a", 60)) for _ in range(4)]
    await _settle()
    honest = asyncio.ensure_future(slots.acquire("b", 60))
    await _settle()
    assert sum(task.done() for task in flood) == 1 and not honest.done()
    slots.release("a")  # a's turn (its queue came first)...
    await _settle()
    slots.release("a")  # ...then b's, not behind a's other waiting requests
    await asyncio.wait_for(honest, 5)
    for task in flood:
        task.cancel()
    await asyncio.gather(*flood, return_exceptions=True)
    assert slots.queued == 0 and slots.running["b"] == 1


async def test_a_wait_past_its_limit_is_overloaded_and_leaves_no_trace() -> None:
    slots = FairSlots(slots=1, per_caller=0, max_waiting=5, max_waiting_per_caller=0)
    await slots.acquire("a", 1)
    with pytest.raises(Overloaded):
        await slots.acquire("b", 0.05)
    assert slots.queued == 0
    slots.release("a")
    assert slots.busy == 0
    await slots.acquire("b", 1)  # nothing stale was handed the freed slot
    assert slots.running["b"] == 1 and slots.busy == 1


async def test_a_cancelled_wait_gives_back_a_slot_it_was_just_handed() -> None:
    slots = FairSlots(slots=1, per_caller=0, max_waiting=5, max_waiting_per_caller=0)
    await slots.acquire("a", 1)
    waiter = asyncio.ensure_future(slots.acquire("b", 60))
    await _settle()
    slots.release("a")  # hands the slot to b's waiter...
    waiter.cancel()  # ...whose client leaves before it runs
    await asyncio.gather(waiter, return_exceptions=True)
    assert slots.busy == 0 and slots.queued == 0 and not slots.running
