"""Helpers and fixtures for the code grader's tests (import the fixtures into a test module)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Result, Sample
from services.reward_rules.code import CodeConfig, CodeGrader

SANDBOX_UID = 65534


def fenced(program: str) -> str:
    return f"<think>I will write it.</think>\nHere it is:\n```python\n{program}\n```\n"


def label(tests: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"grader": "code", "tests": tests, **extra})


def stdio(program: str, cases: list[tuple[str, str]], **extra: Any) -> Sample:
    tests = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases]}
    return Sample(response=fenced(program), label=label(tests, **extra))


def call(program: str, entry: str, cases: list[tuple[list[Any], Any]], **extra: Any) -> Sample:
    tests = {"kind": "call", "entry_point": entry, "cases": [{"args": a, "expected": e} for a, e in cases]}
    return Sample(response=fenced(program), label=label(tests, **extra))


def asserts(
    program: str, entry: str, lines: list[str], helpers: str = "", setup: str = "", **extra: Any
) -> Sample:
    tests = {"kind": "assert", "entry_point": entry, "asserts": lines, "helpers": helpers, "setup": setup}
    return Sample(response=fenced(program), label=label(tests, **extra))


def check(program: str, entry: str, test: str, helpers: str = "", **extra: Any) -> Sample:
    tests = {"kind": "check", "entry_point": entry, "test": test, "helpers": helpers}
    return Sample(response=fenced(program), label=label(tests, **extra))


def score(grader: CodeGrader, *samples: Sample) -> list[Result]:
    return asyncio.run(grader.score(list(samples)))


def _is_ours(pid: int, base_group: str | None) -> bool:
    """A process this test's grader made: in one of its cgroups (where a daemon that escaped its
    sandbox still sits), or a descendant of this process. Sandboxes of other processes running
    as the same uid (another test run on the machine) are not this test's concern."""
    if base_group is not None:
        try:
            if f"/{base_group}/" in Path(f"/proc/{pid}/cgroup").read_text():
                return True
        except OSError:
            return False
    me, seen = os.getpid(), 0
    while pid > 1 and seen < 64:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if pid == me:
            return True
        seen += 1
    return False


def sandbox_processes(base_group: str | None = None) -> list[int]:
    """Pids of this test's processes running as the sandboxes' host uid."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uid_line = next((line for line in status.splitlines() if line.startswith("Uid:")), "")
        if uid_line.split()[1:2] == [str(SANDBOX_UID)] and _is_ours(int(entry.name), base_group):
            found.append(int(entry.name))
    return found


def assert_clean(grader: CodeGrader, timeout_s: float = 10.0) -> None:
    """Every process and cgroup left belongs to a warm, unused sandbox; nothing else survives."""
    pool = grader._pool
    assert pool is not None
    deadline = time.monotonic() + timeout_s
    while True:
        with pool._lock:
            warm = list(pool._warm)
            live = len(pool._live)
            spare = list(pool._spare)  # emptied groups kept for reuse: no process may be in them
        label_runs = grader._label_runs
        idle = [run.sandbox for run in label_runs._idle] if label_runs is not None else []  # clean zygotes
        warm += idle
        if grader._stdio is not None:  # stdio sandboxes proven clean, waiting for the next sample
            warm += grader._stdio.idle_sandboxes()
        allowed: set[int] = set()
        for sandbox in warm:
            assert sandbox.cgroup is not None
            allowed.update(sandbox.cgroup.pids_in())
        base_group = pool.cgroups.base_memory.name if pool.cgroups else None
        stray = set(sandbox_processes(base_group)) - allowed
        groups = {p.name for p in pool.cgroups.base_memory.iterdir() if p.is_dir()} if pool.cgroups else set()
        expected_groups = {s.cgroup.memory.name for s in warm if s.cgroup is not None}
        expected_groups |= {group.memory.name for group in spare}
        spare_empty = not any(group.pids_in() for group in spare)
        if not stray and live == len(warm) and groups == expected_groups and spare_empty:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"stray processes {sorted(stray)}, live {live}, groups {sorted(groups)}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def code_grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=4, warm_sandboxes=4, time_limit_s=2.0, memory_limit_mb=256))
    yield grader
    asyncio.run(grader.aclose())


def rss_mb() -> float:
    return int(Path(f"/proc/{os.getpid()}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
