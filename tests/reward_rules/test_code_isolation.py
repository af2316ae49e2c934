"""Between requests, and between the harness and the program.

One worker, so the next sample gets the sandboxes (candidate and judge) the last one left:
nothing of one request (its program, inputs, a checker's code and expected answers) may be
readable by the next one's code, from files, processes or memory; a run may not leave the work
dir changed; a program may rebind what it likes without breaking the harness; and the harness
reaches the sandbox as a file, whatever its size.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator

import pytest

from arbiter.contract import Sample
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code import runner as runner_module
from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.sandbox import Limits, bwrap_argv
from services.reward_rules.code.runner import PythonRunner
from services.reward_rules.code.session import Session
from tests.reward_rules.code_fixtures import SANDBOX_UID, fenced, label, score, stdio


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, time_limit_s=5.0, memory_limit_mb=256))
    yield grader
    asyncio.run(grader.aclose())


def reused(grader: CodeGrader) -> int:
    assert grader._stdio is not None
    return grader._stdio.reused


def passes(grader: CodeGrader, sample: Sample) -> None:
    (result,) = score(grader, sample)
    assert result.reward == 1.0, result.detail


# ------------------------------------------------------------------ memory of a reused sandbox

MARK = "LEAK" + "MARK:"  # what a request carries, followed by 32 hex digits of its own

# Scans this process's writable memory for MARK and 32 hex digits: what any earlier request left
# there (dumpable first: a function test's program runs in an undumpable process). Its own source
# holds MARK only split, so it finds no token of its own.
SCANNER = """\
import ctypes, re
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its own /proc/self/mem readable
mark = ("LEAK" + "MARK:").encode()
pattern = re.compile(re.escape(mark) + rb"([0-9a-f]{32})")
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if not perms.startswith("rw"):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        found.update(m.group(1).decode() for m in pattern.finditer(data))
"""


def test_a_python_run_reads_no_earlier_request_from_memory(grader: CodeGrader) -> None:
    token = secrets.token_hex(16)
    secret = " ".join([MARK + token] * 1000)  # a request's input of some size (40 KB)
    # the earlier request: its program and its input both carry the token
    passes(grader, stdio(f"# {secret}\nprint(len(input()))", [(secret + "\n", f"{len(secret)}\n")]))
    before = reused(grader)
    scan = stdio(SCANNER + "print(sorted(found))\n", [("", "[]\n")])
    (result,) = score(grader, scan)
    assert reused(grader) == before + 1  # the same sandbox, reused
    assert token not in result.detail
    assert result.reward == 1.0, result.detail


def test_a_checker_reads_no_earlier_request_from_memory(grader: CodeGrader) -> None:
    """A custom checker runs in a label sandbox kept between samples: the next sample's checker
    finds neither the earlier checker's code nor its input, output or expected answer."""
    token = secrets.token_hex(16)
    secret = " ".join([MARK + token] * 1000)
    checker = (
        f"# {secret}\ndef check(input, expected, output):\n    return output.strip() == expected.strip()\n"
    )
    tests = {
        "kind": "stdio",
        "checker": "custom",
        "checker_code": checker,
        "cases": [{"input": secret + "\n", "output": secret + "\n"}],
    }
    passes(grader, Sample(response=fenced("print(input())"), label=label(tests)))
    # the next checker passes only if it finds no token in its memory
    spy = SCANNER.replace("\n", "\n    ").rstrip() + "\n    return not found\n"
    spy_tests = {
        "kind": "stdio",
        "checker": "custom",
        "checker_code": "def check(input, expected, output):\n    " + spy,
        "cases": [{"input": "1\n", "output": "1\n"}],
    }
    passes(grader, Sample(response=fenced("print(input())"), label=label(spy_tests)))


def test_a_function_test_reads_no_earlier_request_from_memory(grader: CodeGrader) -> None:
    token = secrets.token_hex(16)
    secret = " ".join([MARK + token] * 1000)
    passes(grader, stdio(f"# {secret}\nprint(input())", [(secret + "\n", secret + "\n")]))
    body = SCANNER.replace("\n", "\n    ").rstrip()
    program = "def f():\n    " + body + "\n    return sorted(found)\n"
    tests = {"kind": "call", "entry_point": "f", "cases": [{"args": [], "expected": []}]}
    passes(grader, Sample(response=fenced(program), label=label(tests)))


# ------------------------------------------------------------------ the work dir's mode


def test_a_run_leaves_the_work_dir_as_it_found_it(grader: CodeGrader) -> None:
    probe = "import os\nprint(oct(os.stat('.').st_mode & 0o7777))\n"
    _, mode, _ = run_python(grader, probe)  # as a fresh sandbox has it
    for change in ("0o700", "0o000", "0o1777", "0o2755"):
        if change == mode.strip():
            continue
        passes(grader, stdio(f"import os\nos.chmod('.', {change})\nprint('done')\n", [("", "done\n")]))
        before = reused(grader)
        assert run_python(grader, probe) == (0, mode, "")
        assert reused(grader) == before + 1


# ------------------------------------------------------------------ a program that rebinds exits

# SandboxFusion-style anti-cheat header: the program's own ways out raise instead
ANTI_CHEAT = """\
import os, sys, builtins
def _disabled(*args, **kwargs):
    raise RuntimeError("exit is disabled")
os._exit = _disabled
sys.exit = _disabled
builtins.exit = builtins.quit = exit = quit = _disabled
"""


def run_python(grader: CodeGrader, program: str, stdin: str = "") -> tuple[int, str, str]:
    """One stdio run in the grader's sandboxes: exit status, stdout and the whole stderr tail."""
    grader._ensure_started()
    source = grader.sandbox_source()
    session = Session(source, program, 256 << 20, 0, "__main__", time_rule=grader.time_rule())
    try:
        run = session.run_stdio(stdin, 5.0, 1 << 20)
    finally:
        session.close()
    return run.exit_code, run.stdout.decode(), run.stderr.decode()


def test_a_program_that_rebinds_the_exits_is_judged_on_its_output(grader: CodeGrader) -> None:
    passes(grader, stdio(ANTI_CHEAT + "a, b = map(int, input().split())\nprint(a + b)\n", [("1 2\n", "3\n")]))
    code, out, err = run_python(grader, ANTI_CHEAT + "print(input())\n", "x\n")
    assert (code, out, err) == (0, "x\n", "")


def test_an_uncaught_error_shows_the_programs_frames_only(grader: CodeGrader) -> None:
    code, out, err = run_python(grader, ANTI_CHEAT + "def f():\n    raise ValueError('no')\nf()\n")
    assert code == 1 and out == ""
    assert 'File "solution.py", line 9, in <module>' in err and "ValueError: no" in err
    assert "harness" not in err and "_child_main" not in err and "RuntimeError" not in err


@pytest.mark.parametrize(
    ("ending", "status", "stderr"),
    [
        ("raise SystemExit", 0, ""),
        ("raise SystemExit(3)", 3, ""),
        ("raise SystemExit(259)", 3, ""),
        ("raise SystemExit('bye')", 1, "bye\n"),
        ("raise SystemExit(True)", 1, ""),
    ],
)
def test_a_program_exits_as_the_interpreter_would(
    grader: CodeGrader, ending: str, status: int, stderr: str
) -> None:
    assert run_python(grader, ANTI_CHEAT + ending + "\n") == (status, "", stderr)


def test_the_interpreter_waits_for_the_programs_threads(grader: CodeGrader) -> None:
    """The usual competitive-programming way to a deep recursion: main() in a thread."""
    program = (
        "import sys, threading, time\nsys.setrecursionlimit(10 ** 6)\nthreading.stack_size(1 << 26)\n"
        "def main():\n    time.sleep(0.2)\n    print(int(input()) * 2)\n"
        "threading.Thread(target=main).start()\n"
    )
    passes(grader, stdio(program, [("21\n", "42\n")]))


# ------------------------------------------------------------------ the harness as a file


def test_the_harness_reaches_the_sandbox_as_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A harness five times the size of the kernel's one-string limit (MAX_ARG_STRLEN, 128 KiB)
    still starts: the command line only names the file it is bound at."""
    padding = f"\n_PADDING = {'x' * (640 << 10)!r}\n"
    source = runner_module.harness_source() + padding
    monkeypatch.setattr(runner_module, "harness_source", lambda: source)
    runner = PythonRunner()
    limits = Limits(memory_bytes=256 << 20, max_pids=64, tmpfs_bytes=64 << 20, max_frame_bytes=16 << 20)
    argv = bwrap_argv("/usr/bin/bwrap", runner, limits)
    assert max(len(part) for part in argv) < 1024
    assert sum(len(part) + 1 for part in argv) < 8192
    pool = SandboxPool(runner, limits, mode="bwrap", warm=0, host_uid=SANDBOX_UID)
    try:
        sandbox = pool.acquire(limits.memory_bytes)
        deadline = time.monotonic() + 30
        sandbox.wait_ready(deadline)
        assert sandbox.request({"op": "ping", "nonce": "n"}, deadline)["pong"] == "n"
        pool.release(sandbox)
    finally:
        pool.close()
