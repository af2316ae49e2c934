"""Run CPU work on a sample off the event loop when the sample is large.

One event loop serves every client of a service: a scan of a 30 MB response on it stalls
`/healthz` and everyone's replies for seconds. Small samples (nearly all) are cheaper to
handle inline than to hand over; large ones go to a small thread pool. The scans in
`textscan` work in slices of a quarter megabyte, so a thread running them gives the GIL back
to the loop every few milliseconds.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# Above this many characters (or bytes) the CPU work on a sample, or on a whole request or batch
# (their total size: many small samples are as much work as one large one), leaves the event loop.
LARGE = 64 * 1024
# Threads for that work: big samples are rare, and more threads would only contend for the GIL.
WORKERS = 2
# From this size on, work goes to a pool of its own: two 12 MB samples filling the pool made an
# honest 85 KB one wait 5.5 s behind them (head-of-line); the lanes keep the ordinary large
# samples moving while the huge ones grind.
HUGE = 1024 * 1024

_lock = threading.Lock()
_executors: dict[bool, ThreadPoolExecutor] = {}


def _pool(huge: bool = False) -> ThreadPoolExecutor:
    with _lock:
        executor = _executors.get(huge)
        if executor is None:
            name = "arbiter-cpu-huge" if huge else "arbiter-cpu"
            executor = _executors[huge] = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix=name)
        return executor


async def off_loop(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`function(*args, **kwargs)` in the CPU pool, awaited from the loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(function, *args, **kwargs))


async def _off_loop_sized(size: int, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(size >= HUGE), functools.partial(function, *args, **kwargs))


METADATA_ENTRY = 16  # what one metadata entry of a sample counts for in `text_size`


def text_size(samples: Sequence[Any]) -> int:
    """About how much a request's samples hold (prompt, response, label characters, metadata
    entries): 4,000 samples of 7 KB are as much work as one sample of 28 MB, and 4,000 samples of
    700 metadata entries (hashed into each cache key) as much again; both leave the loop."""
    return sum(
        len(s.prompt) + len(s.response) + len(s.label) + METADATA_ENTRY * len(s.metadata) for s in samples
    )


async def maybe_off_loop(size: int, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Inline when `size` is small, in the CPU pool when it is LARGE or more."""
    if size < LARGE:
        return function(*args, **kwargs)
    return await _off_loop_sized(size, function, *args, **kwargs)
