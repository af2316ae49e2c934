"""Who runs next on `/run_code`: a bounded number of runs at once, a bounded queue, callers in turn.

`/run_code` runs on threads of its own, never the code grader's workers, so a program that sleeps
there cannot delay a graded sample (the third red team's starvation: two sleeping calls held an
honest sample back from 0.01 s to 6.5 s). Within `/run_code`, a caller's burst cannot hold the
others back either: a freed slot goes to the waiting callers in turn (round-robin), one caller
holds at most `per_caller` slots, and each caller has a bounded queue of its own; a full queue
makes room for a caller with fewer waiting by refusing the newest request of the one with the
most (a single caller's flood kept every other caller out before). A request that
finds its queue full, or waits longer than it may, is refused at once (`Overloaded`: the route
answers 504, which veRL's client retries) rather than answered after its caller gave up.

Everything here runs on the event loop (no locks): `acquire` is awaited by the route, `release`
is called from the run's done callback.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict, deque


class Overloaded(Exception):
    """No slot for this request: its caller's queue is full or it waited past its limit."""


class FairSlots:
    def __init__(self, slots: int, per_caller: int, max_waiting: int, max_waiting_per_caller: int) -> None:
        self.slots = max(1, slots)
        self.per_caller = max(1, min(per_caller or self.slots, self.slots))
        self.max_waiting = max(0, max_waiting)
        self.max_waiting_per_caller = max(
            0, min(max_waiting_per_caller or self.max_waiting, self.max_waiting)
        )
        self.running: Counter[str] = Counter()
        self._busy = 0
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()  # callers in turn
        self._queued = 0

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def queued(self) -> int:
        return self._queued

    async def acquire(self, caller: str, wait_s: float) -> None:
        """A slot for `caller` within `wait_s`, else Overloaded. Cancellation-safe: a request whose
        client left gives back the slot it was just handed, or its place in the queue."""
        queue = self._waiting.get(caller)
        if self._queued >= self.max_waiting and (queue is None or len(queue) < self.max_waiting_per_caller):
            self._evict_for(caller)  # a full queue: the caller with the most waiting gives one up
        if self._queued >= self.max_waiting or (
            queue is not None and len(queue) >= self.max_waiting_per_caller
        ):
            if self._busy < self.slots and self.running[caller] < self.per_caller and not queue:
                self._grant(caller)  # a free slot needs no queue (max_waiting 0)
                return
            raise Overloaded(f"/run_code is busy: {self._busy} running, {self._queued} waiting")
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if queue is None:
            queue = self._waiting[caller] = deque()
        queue.append(waiter)
        self._queued += 1
        self._dispatch()
        try:
            await asyncio.wait((waiter,), timeout=wait_s)  # never cancels the waiter, never swallows a cancel
        except BaseException:
            self._abandon(caller, waiter)  # this request was cancelled: its client left
            raise
        if waiter.done() and not waiter.cancelled():
            return
        self._abandon(caller, waiter)
        raise Overloaded(f"no /run_code slot within {wait_s:g} s ({self._busy} running)")

    def _evict_for(self, caller: str) -> None:
        """Makes room in a full queue for `caller` by refusing the newest request of the caller
        with the most waiting, if that is at least two more than `caller`'s own: one caller's
        flood fills the queue, but cannot keep another caller's request out of it (its evicted
        request is answered Overloaded, as if it had found the queue full)."""
        own = len(self._waiting.get(caller) or ())
        largest = max(self._waiting, key=lambda other: len(self._waiting[other]), default=None)
        if largest is None or largest == caller or len(self._waiting[largest]) < own + 2:
            return
        queue = self._waiting[largest]
        waiter = queue.pop()
        self._queued -= 1
        if not queue:
            del self._waiting[largest]
        waiter.cancel()  # its acquire wakes, finds it cancelled and raises Overloaded

    def _abandon(self, caller: str, waiter: asyncio.Future[None]) -> None:
        """A wait that ended without its slot being used: the slot back, or its place in the queue."""
        if waiter.done() and not waiter.cancelled():
            self.release(caller)  # handed a slot just as the wait ended
        else:
            waiter.cancel()
            self._forget(caller, waiter)

    def release(self, caller: str) -> None:
        self.running[caller] -= 1
        if self.running[caller] <= 0:
            del self.running[caller]
        self._busy -= 1
        self._dispatch()

    def _grant(self, caller: str) -> None:
        self.running[caller] += 1
        self._busy += 1

    def _forget(self, caller: str, waiter: asyncio.Future[None]) -> None:
        queue = self._waiting.get(caller)
        if queue is None:
            return
        try:
            queue.remove(waiter)
        except ValueError:
            return  # dispatched already (and cancelled: skipped there)
        self._queued -= 1
        if not queue:
            del self._waiting[caller]

    def _dispatch(self) -> None:
        """Hands free slots to the waiting callers in turn (each below its `per_caller`)."""
        while self._busy < self.slots:
            caller = next((c for c in self._waiting if self.running[c] < self.per_caller), None)
            if caller is None:
                return
            queue = self._waiting[caller]
            waiter = queue.popleft()
            self._queued -= 1
            if queue:
                self._waiting.move_to_end(caller)  # its next request waits for the others' turns
            else:
                del self._waiting[caller]
            if waiter.done():  # its client left, its wait ended
                continue
            self._grant(caller)
            waiter.set_result(None)
