"""Emergence statistics for an eval run, computed in a worker process beside the grader.

In `arbiter score` the main process is the serial part of the pipeline: it reads rows, runs the
engine and writes results while the grader's own workers grade. The emergence statistics (a
scan of every response) were half of its work. Here they run in one forked process, started
before the grader starts its threads, while the grader grades the same batch; the main process
only merges the numbers. The values are those the engine computes (the same EmergenceStats on
the same settings); if the worker is lost, they are computed in the main process instead.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from arbiter.contract import Sample
from services.common.lifeline import die_with_parent
from services.common.settings import EmergenceSettings
from services.textstats.emergence import EmergenceStats

_STATS: EmergenceStats | None = None  # the worker's own, built once by _init


def _init(settings: EmergenceSettings, parent: int) -> None:
    global _STATS
    die_with_parent(parent, signal.SIGKILL)  # a killed `arbiter score` leaves no worker behind
    _STATS = EmergenceStats(settings)


def _compute(items: list[tuple[str, str | None]]) -> list[dict[str, float]]:
    if _STATS is None:
        raise RuntimeError("emergence worker not initialised")
    return [_STATS.compute(text, reason) for text, reason in items]


class EmergencePool:
    """One worker process (none on a one-CPU machine: there it would only add copying)."""

    def __init__(self, settings: EmergenceSettings, local: EmergenceStats, worker: bool = True) -> None:
        self._settings = settings
        self._local = local
        self._worker = worker
        self._pool: ProcessPoolExecutor | None = None

    async def start(self) -> None:
        """Fork the worker now, before the grader starts threads a fork must not copy."""
        if not self._worker or (os.cpu_count() or 1) < 2:
            return
        context = multiprocessing.get_context("fork")
        self._pool = ProcessPoolExecutor(
            1, mp_context=context, initializer=_init, initargs=(self._settings, os.getpid())
        )
        # With fork, the first submit forks the worker before it returns: no need to wait for it.
        self._pool.submit(_compute, []).add_done_callback(lambda done: done.exception())

    async def compute(self, samples: Sequence[Sample]) -> list[dict[str, float]]:
        items = [(s.response, s.metadata.get("finish_reason")) for s in samples]
        if self._pool is not None:
            try:
                return await asyncio.get_running_loop().run_in_executor(self._pool, _compute, items)
            except BrokenProcessPool:
                self._pool = None
        return [self._local.compute(text, reason) for text, reason in items]

    async def stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, True, cancel_futures=True)
