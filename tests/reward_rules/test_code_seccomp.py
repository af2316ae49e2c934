"""The sandbox's seccomp filter: kernel interfaces a test program never needs answer EPERM."""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import platform

import pytest

from services.reward_rules.code import CodeGrader
from services.reward_rules.code.backends.bwrap.seccomp import filter_program
from tests.reward_rules.code_fixtures import call, code_grader, score, stdio

__all__ = ["code_grader"]

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers are x86_64's")

# Each call made with arguments that fail differently without the filter (EFAULT, EINVAL, or
# success for PTRACE_TRACEME); with it, every one is EPERM (1).
PROBE = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "def errno_of(nr, *args):\n    ctypes.set_errno(0)\n    libc.syscall(nr, *args)\n    return ctypes.get_errno()\n"
    "calls = {'io_uring_setup': (425, 1, 0), 'keyctl': (250, 0, 0, 0), 'perf_event_open': (298, 0, 0, -1, -1, 0),\n"
    "         'ptrace': (101, 0, 0, 0, 0), 'bpf': (321, 0, 0, 0), 'process_vm_readv': (310, os.getppid(), 0, 0, 0, 0, 0)}\n"
    "print(' '.join(f'{name}={errno_of(*args)}' for name, args in calls.items()))\n"
)
EXPECTED = "io_uring_setup=1 keyctl=1 perf_event_open=1 ptrace=1 bpf=1 process_vm_readv=1\n"


def test_the_filter_is_built() -> None:
    program = filter_program()
    assert program is not None and len(program) > 100


def test_denied_syscalls_answer_eperm_in_stdio_and_function_tests(code_grader: CodeGrader) -> None:
    results = score(
        code_grader,
        stdio(PROBE, [("", EXPECTED)]),
        call(
            "def f():\n    import subprocess, sys\n    return subprocess.run([sys.executable, '-c', "
            + repr(PROBE)
            + "], capture_output=True, text=True).stdout\n",
            "f",
            [([], EXPECTED)],
        ),
    )
    assert [r.reward for r in results] == [1.0, 1.0], [r.detail for r in results]
