"""pool.prestart(): the math fork server started ahead of the pool, which takes it over."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

from services.reward_rules.math import pool as math_pool
from services.reward_rules.math.pool import PoolJob, WorkerPool
from services.reward_rules.math.verdict import GradeOptions, MathVerdict


def test_the_first_pool_takes_over_the_prestarted_fork_server() -> None:
    math_pool.prestart()
    early = math_pool._early
    assert early is not None and early.process is not None
    math_pool.prestart()  # a second call keeps the first
    assert math_pool._early is early
    pool = WorkerPool(1, 0)
    try:
        assert pool.zygote is early and math_pool._early is None
        future: Future[MathVerdict] = Future()
        job = PoolJob("42", GradeOptions(), [(0, "so \\boxed{42}", future)], 5.0, time.monotonic() + 60)
        pool.submit([job])
        assert future.result(timeout=60).verdict == "correct"
        assert WorkerPool(1, 0).zygote is not early  # later pools start their own
    finally:
        pool.close()
    assert early.process is None  # closed with the pool


def test_an_unused_prestarted_fork_server_ends_with_its_process() -> None:
    code = (
        "from services.reward_rules.math import pool\n"
        "pool.prestart()\n"
        "print(pool._early.process.pid, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    pid = int(done.stdout)
    deadline = time.monotonic() + 60
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"
