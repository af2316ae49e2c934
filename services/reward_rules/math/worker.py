"""The worker process: grades jobs sent over a pipe, one result message per sample.

Imported by the forkserver before any worker exists (pool.py preloads it), so sympy and
mpmath are already in memory when a worker, or its replacement after a kill, starts.

Two deadlines guard every sample: a soft one here (SIGALRM, which is reliable because
this is the main thread of a single-threaded process) turns a slow pure-Python
computation into a TIMEOUT verdict and keeps the worker; the hard one in the parent
kills the process when C code (a huge integer power) ignores the signal.
"""

from __future__ import annotations

import contextlib
import gc
import resource
import signal
import time
from multiprocessing.connection import Connection
from types import FrameType

# Preloaded so forked workers share these pages instead of importing them again.
import mpmath  # type: ignore[import-untyped]  # noqa: F401
import sympy  # type: ignore[import-untyped]  # noqa: F401

from services.reward_rules.math.core import GradeOptions, MathVerdict, grade
from services.reward_rules.math.protocol import Job

__all__ = ["worker_main"]

# The soft deadline fires this long before the parent's hard kill.
SOFT_MARGIN_S = 0.15


class _SoftTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so library `except Exception` cannot swallow it."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _SoftTimeout


def _limit_memory(memory_mb: int) -> None:
    if memory_mb <= 0:
        return
    limit = memory_mb * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        # Address space, not RSS: a runaway sympy/bignum computation hits MemoryError.
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _grade_one(
    label: str, response: str, options: GradeOptions, budget: float, full_budget: bool, prompt: str = ""
) -> tuple[MathVerdict, bool]:
    """(outcome, worker must restart).

    An answer that uses up its whole own budget, the memory cap or the recursion limit
    caused that itself: it gets a verdict ("too_costly", paid as a wrong answer), never
    a TIMEOUT that would pay the fallback reward. Only a sample cut short by the batch's
    deadline (the service was late) is a TIMEOUT.
    """
    if budget <= 0:
        return MathVerdict("timeout", "deadline passed before grading started"), False
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        return grade(label, response, options, prompt), False
    except _SoftTimeout:
        if full_budget:
            return MathVerdict(
                "too_costly", f"answer too costly to grade in {budget:.2f}s: counted wrong"
            ), False
        return MathVerdict("timeout", f"grading cut short by the deadline after {budget:.2f}s"), False
    except MemoryError:
        return MathVerdict("too_costly", "answer exceeded the worker memory limit: counted wrong"), True
    except RecursionError:
        return MathVerdict("too_costly", "answer nested too deeply to grade: counted wrong"), False
    except Exception as error:  # a grader bug must not take the worker down
        return MathVerdict("error", f"grader error: {type(error).__name__}: {str(error)[:120]}"), False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def worker_main(conn: Connection, memory_mb: int) -> None:
    """Serve jobs until the pipe closes; exit after a MemoryError (its heap is suspect)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _on_alarm)
    _limit_memory(memory_mb)
    gc.freeze()
    while True:
        try:
            job: Job | None = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        job_id, label, options, items, budget, deadline, prompt = job
        for index, response in items:
            left = deadline - time.monotonic()
            soft = min(budget, left) - SOFT_MARGIN_S
            outcome, restart = _grade_one(label, response, options, soft, budget <= left, prompt)
            try:
                conn.send((job_id, index, outcome))
            except (BrokenPipeError, OSError):
                return
            if restart:
                return
