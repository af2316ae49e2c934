"""CPU share and CPU-time limits: one sample's threads and processes cannot cost another its reward.

Each sandbox has a CFS quota (`cpu_limit` CPUs) and its runs are timed on the CPU time of every
process of the sandbox (cpuacct), with a longer wall-clock limit for programs that sleep. Verdicts
only: no test asserts on a duration.
"""

# ruff: noqa: E501  (candidate programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator

import pytest

from arbiter.contract import Sample
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.backends.bwrap import cgroups
from tests.reward_rules.code_fixtures import assert_clean, asserts, call, score, stdio

# ~0.2-0.4 s of CPU on the development box: well within a 1 s CPU limit, whatever the load
HONEST = "import sys\ns = 0\nfor i in range(5_000_000):\n    s += i\nprint(int(sys.stdin.read()) * 2)\n"
HONEST_CALL = "def double(x):\n    s = 0\n    for i in range(5_000_000):\n        s += i\n    return 2 * x\n"
# up to the pids limit of spinning processes, each in a session of its own, and the parent spinning
HOG = (
    "import os\n"
    "for _ in range(40):\n"
    "    if os.fork() == 0:\n"
    "        os.setsid()\n"
    "        while True: pass\n"
    "while True: pass\n"
)
THREAD_HOG = "import threading\ndef spin():\n    while True: pass\nfor _ in range(40):\n    threading.Thread(target=spin, daemon=True).start()\nspin()\n"


def _cpp(program: str, cases: list[tuple[str, str]]) -> Sample:
    tests = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases]}
    label = {"grader": "code", "language": "cpp", "tests": tests}
    return Sample(response=f"Here:\n```cpp\n{program}```\n", label=json.dumps(label))


@pytest.fixture
def cpu_grader() -> Iterator[CodeGrader]:
    """A wall-clock limit of 7 s, for the one test that waits for it (closed after it: the other
    tests' leftover checks count every sandbox process of this test run as theirs)."""
    config = CodeConfig(
        workers=1, warm_sandboxes=1, time_limit_s=1.0, memory_limit_mb=256, wall_factor=6.0, cpu_limit=1.0
    )
    grader = CodeGrader(config)
    yield grader
    asyncio.run(grader.aclose())


def _cpu_timed(grader: CodeGrader) -> bool:
    grader._ensure_started()
    return grader.time_rule().cpu


@pytest.fixture
def cpu_timed(cpu_grader: CodeGrader) -> CodeGrader:
    if not _cpu_timed(cpu_grader):
        pytest.skip("no cgroup v1 cpu/cpuacct controllers here: time limits stay wall-clock")
    return cpu_grader


@pytest.fixture(scope="module")
def patient_grader() -> Iterator[CodeGrader]:
    """A CPU limit of 1 s with a wall-clock limit (and sample budget) of a minute or more: a program
    that spins reaches its CPU limit long before the wall clock, unless some 60 tasks compete for
    its core."""
    config = CodeConfig(
        workers=5,
        warm_sandboxes=5,
        time_limit_s=1.0,
        memory_limit_mb=256,
        wall_factor=60.0,
        cpu_limit=1.0,
        sample_budget_s=120.0,
    )
    grader = CodeGrader(config)
    yield grader
    asyncio.run(grader.aclose())


@pytest.fixture
def patient(patient_grader: CodeGrader) -> CodeGrader:
    if not _cpu_timed(patient_grader):
        pytest.skip("no cgroup v1 cpu/cpuacct controllers here: time limits stay wall-clock")
    return patient_grader


@pytest.mark.parametrize("hog", [HOG, THREAD_HOG], ids=["processes", "threads"])
def test_a_hog_does_not_time_out_honest_samples(patient: CodeGrader, hog: str) -> None:
    honest = [stdio(HONEST, [("1\n", "2\n"), ("3\n", "6\n"), ("5\n", "10\n")]) for _ in range(3)]
    honest.append(call(HONEST_CALL, "double", [([1], 2), ([4], 8)]))
    results = score(patient, stdio(hog, [("1\n", "2\n")]), *honest)
    assert results[0].reward == 0.0
    assert "timeout" in results[0].detail
    for result in results[1:]:
        assert result.reward == 1.0, result.detail
    assert_clean(patient, timeout_s=60.0)  # a bound for a loaded machine to reap 40 spinners


def test_a_busy_loop_past_its_cpu_limit_is_a_timeout(patient: CodeGrader) -> None:
    (result,) = score(patient, stdio("while True: pass\n", [("1\n", "2\n")]))
    assert result.reward == 0.0
    assert "timeout (over 1 s of CPU time)" in result.detail


def test_a_sleep_past_the_wall_limit_is_a_timeout(cpu_timed: CodeGrader) -> None:
    (result,) = score(cpu_timed, stdio("import time\ntime.sleep(60)\nprint(2)\n", [("1\n", "2\n")]))
    assert result.reward == 0.0
    assert "wall-clock limit" in result.detail


def test_a_child_burning_cpu_while_the_parent_waits_is_counted(patient: CodeGrader) -> None:
    forks = "import os\nif os.fork() == 0:\n    while True: pass\nos.wait()\nprint(2)\n"
    daemon = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        while True: pass\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "time.sleep(60)\n"
    )
    results = score(patient, stdio(forks, [("1\n", "2\n")]), stdio(daemon, [("1\n", "2\n")]))
    for result in results:  # on the wall clock they would have run until the wall limit
        assert result.reward == 0.0
        assert "of CPU time" in result.detail, result.detail
    assert_clean(patient, timeout_s=60.0)  # a bound for a loaded machine to reap 40 spinners


def test_a_function_past_its_cpu_limit_is_a_timeout(patient: CodeGrader) -> None:
    """Deterministic under load: no test returns before it has spent more CPU
    time than its limit. The background case waits on the CPU clock, not on the wall clock (it
    used to sleep 2.5 s and return, and passed when a loaded machine gave its spinning thread less
    than 1 s of CPU in that time)."""
    spins = "def f(x):\n    while True: pass\n"
    background = (
        "import threading, time\n"
        "def spin():\n"
        "    while True: pass\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "def f(x):\n"
        "    while time.process_time() < 30:\n"  # returns only past 30 s of the process's CPU time
        "        time.sleep(0.01)\n"
        "    return 2 * x\n"
    )
    results = score(
        patient,
        call(spins, "f", [([1], 2)]),
        asserts(spins, "f", ["assert f(1) == 2"]),
        call(background, "f", [([1], 2)]),
    )
    for result in results:
        assert result.reward == 0.0
        assert "CPU time" in result.detail, result.detail


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (Debian g++)")
def test_cpp_runs_are_timed_on_cpu(patient: CodeGrader) -> None:
    spin = "int main() { volatile unsigned long x = 0; for (;;) x++; }\n"
    ok = '#include <cstdio>\nint main() { int a; if (scanf("%d", &a) == 1) printf("%d\\n", 2 * a); }\n'
    spun, passed = score(patient, _cpp(spin, [("1\n", "2\n")]), _cpp(ok, [("1\n", "2\n"), ("4\n", "8\n")]))
    assert spun.reward == 0.0 and "of CPU time" in spun.detail, spun.detail
    assert passed.reward == 1.0, passed.detail


def test_without_cpu_accounting_limits_stay_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = cgroups._v1_mounts()  # as on a machine without the cpu and cpuacct controllers
    monkeypatch.setattr(
        cgroups, "_v1_mounts", lambda: {k: v for k, v in mounts.items() if k not in ("cpu", "cpuacct")}
    )
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, time_limit_s=3.0, memory_limit_mb=256))
    try:
        grader._ensure_started()
        assert not grader.time_rule().cpu
        light = "print(int(input()) * 2)\n"  # on the wall clock: a few ms, whatever the machine's load
        samples = [stdio("import time\ntime.sleep(60)\n", [("1\n", "2\n")]), stdio(light, [("1\n", "2\n")])]
        slept, passed = score(grader, *samples)
        assert slept.reward == 0.0 and "timeout (3 s)" in slept.detail, slept.detail
        assert passed.reward == 1.0, passed.detail
    finally:
        asyncio.run(grader.aclose())
