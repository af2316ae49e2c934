"""Worker processes with a hard per-sample deadline, usable from any thread or event loop.

Each worker has a dispatcher thread in this process that owns its socket: it takes a
job (samples sharing one reference) from a shared queue, streams the samples' results
back into concurrent futures, and SIGKILLs the worker when a sample overruns its
budget; the replacement is forked by the zygote (zygote.py), which already imported
sympy, so it costs milliseconds. Nothing here touches an event loop, so callers wrap
the futures with `asyncio.wrap_future` in whichever loop they run.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from services.reward_rules.math.protocol import FORK_REQUEST as REQUEST
from services.reward_rules.math.verdict import GradeOptions, MathVerdict

__all__ = ["PoolJob", "WorkerPool", "prestart"]

log = logging.getLogger(__name__)

_ZYGOTE_MODULE = "services.reward_rules.math.zygote"
# The zygote imports sympy before its first reply; allow for a slow, busy machine.
_ZYGOTE_START_S = 60.0
# How long past its budget a sample may run before its worker is killed.
KILL_GRACE_S = 0.25
_job_ids = itertools.count()


@dataclass
class PoolJob:
    """Samples that share one label, graded in order by one worker."""

    label: str
    options: GradeOptions
    items: list[tuple[int, str, Future[MathVerdict]]]
    budget_s: float
    deadline: float  # time.monotonic() by which every result must exist
    prompt: str = ""  # shared by the job's samples (its options answer multiple choice)
    job_id: int = field(default_factory=lambda: next(_job_ids))


def _settle(future: Future[MathVerdict], outcome: MathVerdict) -> None:
    if not future.done():
        with contextlib.suppress(Exception):  # cancelled meanwhile by the caller
            future.set_result(outcome)


class _Zygote:
    """The fork server process (zygote.py) and the control socket to it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        paths = [os.path.abspath(p) for p in sys.path if p]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", _ZYGOTE_MODULE, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        theirs.close()
        ours.settimeout(_ZYGOTE_START_S)
        self.control = ours

    def fork(self, memory_mb: int) -> tuple[_Process, Connection]:
        """A new worker: (its process, the connection to it). Restarts the zygote if it died."""
        with self.lock:
            for _ in range(2):
                if self.control is None or self.process is None or self.process.poll() is not None:
                    self.stop()
                    self._start()
                assert self.control is not None
                try:
                    self.control.sendall(REQUEST.pack(memory_mb))
                    message, fds, _, _ = socket.recv_fds(self.control, REQUEST.size, 2)
                except OSError:
                    self.stop()
                    continue
                if len(message) == REQUEST.size and fds:
                    (pid,) = REQUEST.unpack(message)
                    return _Process(pid, fds[1] if len(fds) > 1 else None), Connection(fds[0])
                for fd in fds:
                    os.close(fd)
                self.stop()
            raise RuntimeError("the math worker fork server did not answer")

    def stop(self) -> None:
        control, process = self.control, self.process
        self.control = self.process = None
        if control is not None:
            control.close()  # the zygote exits when its control socket closes...
        if process is not None:
            # ...unless a process forked from this one since holds a copy of the socket (an eval
            # run's statistics worker forks after prestart()): it holds nothing to flush, so kill it.
            process.kill()
            process.wait(timeout=2.0)


_early: _Zygote | None = None  # started by prestart(), taken by the first WorkerPool
_early_lock = threading.Lock()


def prestart() -> None:
    """Start the fork server now; the first WorkerPool built later takes it over, already warm.

    Its start-up (a fresh Python importing sympy: about half a second) then overlaps whatever
    the caller does meanwhile (`arbiter score` imports and builds its engine). Never taken
    over, it exits with this process: its control socket closes.
    """
    global _early
    with _early_lock:
        if _early is None:
            zygote = _Zygote()
            with zygote.lock:
                zygote._start()
            _early = zygote


def _take_zygote() -> _Zygote:
    global _early
    with _early_lock:
        zygote, _early = _early, None
    return zygote if zygote is not None else _Zygote()


class _Process:
    """A worker process, named by a pidfd where the kernel has them.

    The zygote's children are reaped the moment they exit, so a dead worker's pid can belong
    to any new process a moment later: signalled by pid, "the worker" may be a stranger (another
    service, a test runner). The pidfd names this one process for as long as it is open.
    """

    def __init__(self, pid: int, pidfd: int | None) -> None:
        self.pid = pid
        self._pidfd = pidfd

    def is_alive(self) -> bool:
        if self._pidfd is not None:
            return not select.select([self._pidfd], [], [], 0)[0]  # readable once it has exited
        try:
            os.kill(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill(self) -> None:
        """SIGKILL it (if it still runs) and let go of its pidfd."""
        pidfd, self._pidfd = self._pidfd, None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pidfd is None:
                os.kill(self.pid, signal.SIGKILL)  # no pidfds here: the old race remains
            else:
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                finally:
                    os.close(pidfd)


class _Slot:
    """One worker process and the thread that drives it."""

    def __init__(self, pool: WorkerPool, number: int) -> None:
        self.pool = pool
        self.number = number
        self.process: _Process | None = None
        self.conn: Connection | None = None
        self.thread = threading.Thread(target=self._run, name=f"math-worker-{number}", daemon=True)

    # -- process lifecycle ----------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def is_alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def ensure_started(self) -> Connection:
        if self.conn is not None and self.is_alive():
            return self.conn
        self.stop_process()
        self.process, self.conn = self.pool.zygote.fork(self.pool.memory_mb)
        self.pool.starts += 1
        return self.conn

    def stop_process(self) -> None:
        process, conn = self.process, self.conn
        self.process = self.conn = None
        if process is not None:
            process.kill()
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    # -- job loop --------------------------------------------------------------------------
    def _run(self) -> None:
        with contextlib.suppress(Exception):
            self.ensure_started()  # warm up before the first job arrives
        while True:
            job = self.pool.jobs.get()
            if job is None:
                break
            try:
                self._run_job(job)
            except Exception as error:  # never let the dispatcher die
                log.exception("math worker dispatcher failed")
                for _, _, future in job.items:
                    _settle(future, MathVerdict("error", f"worker pool error: {type(error).__name__}"))
        self.stop_process()

    def _run_job(self, job: PoolJob) -> None:
        pending = deque(item for item in job.items if not item[2].done())
        crashes = 0
        while pending:
            if self.pool.closed:
                for _, _, future in pending:
                    _settle(future, MathVerdict("error", "grader is shutting down"))
                return
            if time.monotonic() >= job.deadline:
                for _, _, future in pending:
                    _settle(future, MathVerdict("timeout", "deadline passed while queued"))
                return
            try:
                conn = self.ensure_started()
                conn.send(
                    (
                        job.job_id,
                        job.label,
                        job.options,
                        [(i, r) for i, r, _ in pending],
                        job.budget_s,
                        job.deadline,
                        job.prompt,
                    )
                )
            except Exception as error:
                self.stop_process()
                crashes += 1
                if crashes >= 3:
                    for _, _, future in pending:
                        _settle(future, MathVerdict("error", f"cannot start a math worker: {error}"))
                    return
                continue
            started = time.monotonic()
            while pending:
                index, _, future = pending[0]
                limit = min(started + job.budget_s, job.deadline) + KILL_GRACE_S
                try:
                    ready = conn.poll(max(0.0, limit - time.monotonic()))
                    message = conn.recv() if ready else None
                except (EOFError, OSError):
                    # The worker died (OOM kill, crash, or its planned exit after a MemoryError).
                    self.stop_process()
                    crashes += 1
                    if crashes >= 2:
                        pending.popleft()
                        # Two workers died on this answer: the answer did it, so it is a verdict.
                        crashed = MathVerdict("too_costly", "answer crashed the grader twice: counted wrong")
                        _settle(future, crashed)
                        crashes = 0
                    break
                if message is None:
                    self.stop_process()
                    self.pool.kills += 1
                    pending.popleft()
                    # Its own budget used up (not the batch's deadline): the answer's doing.
                    own = started + job.budget_s <= job.deadline
                    verdict = "too_costly" if own else "timeout"
                    _settle(
                        future,
                        MathVerdict(verdict, f"no verdict within {limit - started:.2f}s; worker killed"),
                    )
                    break
                job_id, got_index, outcome = message
                if job_id != job.job_id or got_index != index:
                    continue  # a stale message from an earlier, abandoned job
                pending.popleft()
                crashes = 0
                _settle(future, outcome)
                started = time.monotonic()


class WorkerPool:
    """N worker processes fed from one queue; `submit` never blocks."""

    def __init__(self, workers: int, memory_mb: int) -> None:
        self.zygote = _take_zygote()
        self.memory_mb = memory_mb
        self.jobs: queue.SimpleQueue[PoolJob | None] = queue.SimpleQueue()
        self.closed = False
        self.starts = 0
        self.kills = 0
        self.slots = [_Slot(self, n) for n in range(max(1, workers))]
        for slot in self.slots:
            slot.thread.start()

    @property
    def size(self) -> int:
        return len(self.slots)

    def submit(self, jobs: Sequence[PoolJob]) -> None:
        if self.closed:
            raise RuntimeError("worker pool is closed")
        for job in jobs:
            self.jobs.put(job)

    def alive(self) -> int:
        """Workers whose process is running now (for health checks and tests)."""
        return sum(1 for s in self.slots if s.is_alive())

    def close(self, timeout: float = 5.0) -> None:
        """Stop the dispatchers and kill the workers (blocking; call from a thread)."""
        if self.closed:
            return
        self.closed = True
        for _ in self.slots:
            self.jobs.put(None)
        end = time.monotonic() + timeout
        for slot in self.slots:
            slot.thread.join(max(0.0, end - time.monotonic()))
        for slot in self.slots:
            slot.stop_process()
        with self.zygote.lock:
            self.zygote.stop()
