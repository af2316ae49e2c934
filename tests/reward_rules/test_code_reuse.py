"""Stdio sandboxes reused across samples (reuse.py): what one sample does reaches no later one.

One worker, so the next sample gets the sandbox the last one left (when it was proven clean):
files, daemons, the harness's nice value and rlimits, IPC objects, the harness's pipes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from services.reward_rules.code import CodeConfig, CodeGrader
from tests.reward_rules.code_fixtures import assert_clean, call, score, stdio


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, time_limit_s=3.0, memory_limit_mb=256))
    yield grader
    asyncio.run(grader.aclose())


def counts(grader: CodeGrader) -> tuple[int, int]:
    assert grader._stdio is not None
    return grader._stdio.reused, grader._stdio.fresh


def run(grader: CodeGrader, program: str, expected: str, stdin: str = "") -> None:
    (result,) = score(grader, stdio(program, [(stdin, expected)]))
    assert result.reward == 1.0, result.detail


PROCESSES = "import os\nprint(sum(name.isdigit() for name in os.listdir('/proc')))\n"


def test_a_clean_sandbox_is_reused(grader: CodeGrader) -> None:
    run(grader, "print(input()[::-1])", "cba\n", "abc\n")
    reused, _ = counts(grader)
    run(grader, "print(input()[::-1])", "cba\n", "abc\n")
    assert counts(grader)[0] == reused + 1
    assert_clean(grader)


def test_files_and_daemons_are_gone(grader: CodeGrader) -> None:
    run(grader, PROCESSES, "4\n")  # bwrap's init, the harness, the sample's fork of it, this program
    writer = (
        "import os, time\nopen('answer', 'w').write('3')\nif os.fork() == 0:\n    os.setsid()\n"
        "    if os.fork() == 0:\n        while True:\n            time.sleep(0.01)\n    os._exit(0)\n"
        "os.wait()\nprint('left')\n"
    )
    run(grader, writer, "left\n")
    reused, _ = counts(grader)
    run(grader, "import os\nprint([n for n in os.listdir('.') if n != '.stdin'])\n", "[]\n")
    run(grader, PROCESSES, "4\n")  # the daemon is gone
    assert counts(grader)[0] == reused + 2


@pytest.mark.parametrize(
    "tamper",
    [
        "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
        "import resource\nresource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (64, 64))",
        "os.sched_setaffinity(os.getppid(), {0})",
    ],
)
def test_a_tampered_harness_is_not_reused(grader: CodeGrader, tamper: str) -> None:
    body = tamper.replace("\n", "\n    ")
    run(
        grader,
        f"import os\ntry:\n    {body}\n    print('done')\nexcept OSError:\n    print('refused')\n",
        "done\n",
    )
    _, fresh = counts(grader)
    probe = "import os, resource\nprint(os.nice(0), resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 64)\n"
    run(grader, probe, "0 True\n")
    assert counts(grader)[1] == fresh + 1  # the tampered sandbox was killed: a fresh one ran this


def test_the_harness_is_out_of_reach(grader: CodeGrader) -> None:
    program = (
        "import os\nfor path in ('/proc/%d/mem' % os.getppid(), '/proc/%d/fd/1' % os.getppid()):\n"
        "    try:\n        open(path, 'wb')\n        print('open')\n"
        "    except OSError:\n        print('denied')\n"
    )
    run(grader, program, "denied\ndenied\n")


def test_ipc_objects_cannot_be_made(grader: CodeGrader) -> None:
    program = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.shmget(0, 4096, 0o1600), libc.msgget(0, 0o1600), libc.semget(0, 1, 0o1600))\n"
    )
    run(grader, program, "-1 -1 -1\n")


def test_function_tests_reuse_a_fresh_fork(grader: CodeGrader) -> None:
    """A function test's program runs in the sample's fork of the harness, never in the harness:
    what it patches there (builtins, modules, a thread) is gone for the next sample's program."""
    tamper = (
        "import builtins, math, threading, time\n"
        "builtins.abs = lambda x: 0\nmath.sqrt = lambda x: -1.0\n"
        "threading.Thread(target=lambda: time.sleep(60), daemon=True).start()\n"
        "def f(x):\n    return x + 1\n"
    )
    (result,) = score(grader, call(tamper, "f", [([1], 2)]))
    assert result.reward == 1.0, result.detail
    reused, fresh = counts(grader)
    probe = "import math\ndef f(x):\n    return [abs(-3), math.sqrt(x)]\n"
    (result,) = score(grader, call(probe, "f", [([4], [3, 2.0])]))
    assert result.reward == 1.0, result.detail
    assert counts(grader) == (reused + 1, fresh)
    assert_clean(grader)


def test_runs_stay_the_memory_killers_first_choice(grader: CodeGrader) -> None:
    """A sealed harness's runs set themselves dumpable again, so their oom_score_adj is writable."""
    program = "print(open('/proc/self/oom_score_adj').read().strip())\n"
    run(grader, program, "1000\n")
    run(grader, program, "1000\n")
