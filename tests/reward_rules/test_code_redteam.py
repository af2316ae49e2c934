"""Red-team attacks on the stdio path (one request per sample, runs spawned from a sealed memfd,
sandboxes reused across samples, C++ checker programs), each through the public grader.

The candidate is the adversary: it wants reward 1 for a wrong answer, or a status other than OK
(the fallback reward) where it deserved 0, or to hurt later tests, later samples in a reused
sandbox, or other samples. Every test asserts the verdict it deserves."""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeConfig, CodeGrader
from tests.reward_rules.code_fixtures import assert_clean, check, fenced, score, stdio

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (Debian g++)")

ADD = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"
ADD_CPP = '#include <bits/stdc++.h>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }\n'


def cpp(program: str, cases: list[tuple[str, str]], **label: Any) -> Sample:
    spec = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases]}
    body = {"grader": "code", "language": "cpp", "tests": spec, "time_limit_s": 2.0, **label}
    return Sample(response=f"Here:\n```cpp\n{program}```\n", label=json.dumps(body))


def checked(program: str, checker: str, cases: list[tuple[str, str]], **label: Any) -> Sample:
    """A Python program judged by a C++ checker program (`checker input output answer`)."""
    spec = {
        "kind": "stdio",
        "cases": [{"input": i, "output": o} for i, o in cases],
        "checker": "testlib",
        "checker_code": checker,
    }
    return Sample(response=fenced(program), label=json.dumps({"grader": "code", "tests": spec, **label}))


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    """One worker: a sample gets the sandbox the last one left (when it was proven clean)."""
    grader = CodeGrader(
        CodeConfig(
            workers=1, warm_sandboxes=1, time_limit_s=2.0, memory_limit_mb=256, compile_time_limit_s=20.0
        )
    )
    yield grader
    asyncio.run(grader.aclose())


# ---------------------------------------------------------------- what a run can learn


YES_NO = [("1\n", "YES\n"), ("2\n", "NO\n"), ("3\n", "NO\n"), ("4\n", "YES\n"), ("5\n", "YES\n")]
LENGTH_ORACLE = (
    "import gc, sys\n"
    "bound = None\n"
    "frame = sys._getframe()\n"
    "while frame is not None and bound is None:\n"
    "    request = frame.f_locals.get('request')\n"
    "    if isinstance(request, dict) and isinstance(request.get('max_output_bytes'), int):\n"
    "        bound = request['max_output_bytes']\n"
    "    frame = frame.f_back\n"
    "length = (bound - (1 << 20)) // 2 if bound else 0\n"
    "print('YES' if length == 4 else 'NO')\n"
)


def test_a_run_learns_nothing_of_the_expected_output(grader: CodeGrader) -> None:
    """A Python run is a fork of the harness, so it can read everything the harness was sent. The
    output bound of each test (a function of the expected output's length) told a yes/no problem's
    answer: `YES\\n` is 4 bytes, `NO\\n` 3. The answers here do not follow from the inputs."""
    (result,) = score(grader, stdio(LENGTH_ORACLE, YES_NO))
    assert result.status is Status.OK and result.reward == 0.0, result.detail


def test_an_output_over_a_test_s_bound_is_still_an_output_limit(grader: CodeGrader) -> None:
    """The bound is applied by the grader now (not sent in): a flood past it is still its verdict."""
    flood = "import sys\nsys.stdout.write('3\\n' + 'x' * (3 << 20))\n"
    (result,) = score(grader, stdio(flood, [("1 2\n", "3\n")]))
    assert result.reward == 0.0 and "output limit" in result.detail, result.detail
    (result,) = score(grader, stdio(ADD, [("1 2\n", "3\n"), ("5 6\n", "11\n")]))
    assert result.reward == 1.0, result.detail


FORGER = (
    "import base64, json, os, struct, sys\n"
    "def frame(stdout):\n"
    "    body = json.dumps({'ok': True, 'exit': 0, 'signal': 0, 'timeout': False, 'output_limit': False,\n"
    "                       'stdout': base64.b64encode(stdout).decode(), 'stderr': ''}).encode()\n"
    "    return struct.pack('>I', len(body)) + body\n"
    "if sys.stdin.read().strip() == '1':\n"
    "    forged = frame(b'1\\n') + frame(b'YES\\n') * 4\n"
    "    for pid in ('self', str(os.getppid()), '1'):\n"
    "        for fd in range(3 if pid == 'self' else 0, 64):\n"
    "            try:\n"
    "                handle = os.open(f'/proc/{pid}/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)\n"
    "            except OSError:\n"
    "                continue\n"
    "            try:\n"
    "                os.write(handle, forged)\n"
    "            except OSError:\n"
    "                pass\n"
    "            os.close(handle)\n"
    "    for fd in range(3, 1024):\n"
    "        try:\n"
    "            os.write(fd, forged)\n"
    "        except OSError:\n"
    "            pass\n"
    "    print(1)\n"
    "else:\n"
    "    print('NO')\n"
)


def test_frames_a_run_writes_are_never_read_as_replies(grader: CodeGrader) -> None:
    """Test 1 writes reply frames (test 2 passed with YES) into every fd it can reach, its own,
    the harness's and pid 1's; test 2 prints NO. Only the harness's own frames count."""
    (result,) = score(grader, stdio(FORGER, [("1\n", "1\n"), ("2\n", "YES\n"), ("3\n", "YES\n")]))
    assert result.status is Status.OK and result.reward == 0.0, result.detail
    assert "case 2: wrong answer" in result.detail, result.detail


# ---------------------------------------------------------------- what a run can leave behind

DEFAULT_ACL = (
    "import os, struct\n"
    "entries = ((0x01, 0), (0x04, 0), (0x20, 0))  # user::--- group::--- other::---\n"
    "acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', tag, perm, 0xFFFFFFFF) for tag, perm in entries)\n"
    "for path in ('.', '/tmp'):\n"
    "    try:\n"
    "        os.setxattr(path, 'system.posix_acl_default', acl)\n"
    "    except OSError:\n"
    "        pass\n"
    "a, b = map(int, open(0).read().split())\n"
    "print(a + b)\n"
)


def test_a_default_acl_on_the_work_dir_reaches_no_later_test(grader: CodeGrader) -> None:
    """A default ACL on the work dir survives emptying it: every file the harness made there later
    (the next test's stdin, a C++ source) came out unreadable, and the next test crashed."""
    (result,) = score(grader, stdio(DEFAULT_ACL, [("1 2\n", "3\n"), ("5 6\n", "11\n"), ("7 8\n", "15\n")]))
    assert result.reward == 1.0, result.detail


@needs_cxx
def test_a_default_acl_on_the_work_dir_reaches_no_later_sample(grader: CodeGrader) -> None:
    """In a reused sandbox the ACL outlived the sample: every later sample's runs crashed, and a
    later C++ compile failed (its source unreadable) into the compile cache, for every sample of
    that program."""
    assert grader._stdio is not None
    for _ in range(2):
        (result,) = score(grader, stdio(DEFAULT_ACL, [("1 2\n", "3\n")]))
        assert result.reward == 1.0, result.detail
        reused = grader._stdio.reused
        (result,) = score(grader, stdio(ADD, [("1 2\n", "3\n")]))
        assert result.reward == 1.0, result.detail
        (result,) = score(grader, stdio(DEFAULT_ACL, [("1 2\n", "3\n")]))
        program = ADD_CPP.replace("int main()", "int unique_to_the_acl_test() { return 7; }\nint main()")
        (result,) = score(grader, cpp(program, [("1 2\n", "3\n")]))
        assert result.reward == 1.0 and result.logs["code/compile_error"] == 0.0, result.detail
        assert grader._stdio.reused > reused  # the samples did run in the sandbox the ACL sample left
    assert_clean(grader)


# ---------------------------------------------------------------- checker programs

# Input: "<ms to accept> <ms to fail>". FAIL (testlib's 3) on the output "better" (a participant's
# answer better than the jury's); else accepts the label's answer after sleeping, as a slow checker.
SLOW_CHECKER = r"""
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
int main(int argc, char** argv) {
  std::ifstream in(argv[1]), out(argv[2]), ans(argv[3]);
  long accept_ms = 0, fail_ms = 0; in >> accept_ms >> fail_ms;
  std::string o, a; out >> o; ans >> a;
  if (o == "better") { std::this_thread::sleep_for(std::chrono::milliseconds(fail_ms)); return 3; }
  if (o != a) return 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(accept_ms));
  return 0;
}
"""


@needs_cxx
def test_a_spent_budget_cannot_turn_a_checker_failure_into_a_bad_label() -> None:
    """The program sleeps through most of the sample's budget, then prints what makes the checker
    FAIL. The re-run on the label's own answer got only what was left of the budget, timed out,
    and the sample became INVALID_INPUT (the fallback reward) instead of a wrong answer."""
    grader = CodeGrader(
        CodeConfig(workers=1, warm_sandboxes=1, sample_budget_s=2.5, compile_time_limit_s=20.0)
    )
    program = "import time\ntime.sleep(1.8)\nprint('better')\n"
    try:
        (result,) = score(grader, checked(program, SLOW_CHECKER, [("1000 0\n", "slow\n")], time_limit_s=2.0))
    finally:
        asyncio.run(grader.aclose())
    assert result.status is Status.OK and result.reward == 0.0, result.detail
    assert "wrong answer" in result.detail or "timeout" in result.detail, result.detail


@needs_cxx
def test_a_slow_checker_does_not_time_out_the_next_test(grader: CodeGrader) -> None:
    """Judging test 1 takes two slow checker runs (a FAIL, then the label's answer) while test 2
    ran long ago; test 2's reply waited in the pipe, and was no timeout of the program's."""
    program = "import sys\nprint('better' if sys.stdin.read().split()[0] == '1900' else 'fine')\n"
    cases = [("1900 1900\n", "slow\n"), ("0 0\n", "fine\n")]
    (result,) = score(grader, checked(program, SLOW_CHECKER, cases, time_limit_s=2.0))
    assert result.status is Status.OK and result.score == 0.5, result.detail
    assert "case 1: wrong answer" in result.detail, result.detail


# ---------------------------------------------------------------- the memory killer's choice

OOM_SCORE_CPP = '#include <cstdio>\nint main() { FILE* f = fopen("/proc/self/oom_score_adj", "r"); int v = -1; if (f) fscanf(f, "%d", &v); printf("%d\\n", v); }\n'
HARNESS_OOM_SCORE = (
    "import os\n"
    "path = f'/proc/{os.getppid()}/oom_score_adj'\n"
    "before = open(path).read()\n"
    "for fd in range(64):\n"
    "    try:\n"
    "        if os.readlink(f'/proc/self/fd/{fd}').endswith('oom_score_adj'):\n"
    "            os.pwrite(fd, b'1000', 0)\n"
    "    except OSError:\n"
    "        pass\n"
    "try:\n"
    "    with open(path, 'w') as handle:\n"
    "        handle.write('1000')\n"
    "except OSError:\n"
    "    pass\n"
    "print('unchanged' if open(path).read() == before else 'changed')\n"
)


@needs_cxx
def test_a_spawned_run_is_the_memory_killer_s_first_choice(grader: CodeGrader) -> None:
    """A sealed harness (a reusable sandbox) could not open its own oom_score_adj (its /proc files
    are root's once it is undumpable): C++ runs kept its 0, and a program spread over many small
    processes got the harness killed instead of itself."""
    (result,) = score(grader, cpp(OOM_SCORE_CPP, [("", "1000\n"), ("", "1000\n")]))
    assert result.reward == 1.0, result.detail


@needs_cxx
def test_a_python_run_cannot_change_the_harness_s_oom_score(grader: CodeGrader) -> None:
    """The harness holds its oom_score_adj open (for spawns); a Python run, a fork of it, does not."""
    (result,) = score(grader, cpp(OOM_SCORE_CPP, [("", "1000\n")]))
    assert result.reward == 1.0, result.detail
    (result,) = score(grader, stdio(HARNESS_OOM_SCORE, [("", "unchanged\n"), ("", "unchanged\n")]))
    assert result.reward == 1.0, result.detail


def test_label_code_is_the_memory_killer_s_first_choice_in_its_judge(grader: CodeGrader) -> None:
    """A judge's zygote is undumpable before its first fork, so its children (label code, holding
    what the candidate returned) could not set their oom_score_adj: they kept the zygote's."""
    test = (
        "def check(candidate):\n    assert candidate(1) == 1\n"
        "    assert open('/proc/self/oom_score_adj').read().strip() == '1000'\n"
    )
    for _ in range(2):  # the second sample in the judge's zygote, once it is sealed
        (result,) = score(grader, check("def f(x):\n    return x\n", "f", test))
        assert result.reward == 1.0, result.detail


# ---------------------------------------------------------------- the compiler and its cache

# constexpr evaluation runs until g++'s operation limit (2^33 steps): far past any compile limit
FOREVER_COMPILE = (
    "constexpr long spin() { long s = 0; for (long i = 0; i < (1L << 40); i++) s += i ^ (s >> 3); return s; }\n"
    "constexpr long value = spin();\nint main() { return (int)value; }\n"
)


@pytest.mark.parametrize(
    "program",
    [
        'asm(".incbin \\"/dev/zero\\"");\nint main() {}\n',
        "char big[1 << 30] = {1};\nint main(int argc, char**) { return big[argc << 20]; }\n",
        '#pragma GCC optimize("O0")\n#include </dev/urandom>\nint main() {}\n',
    ],
    ids=["incbin-dev-zero", "gigabyte-binary", "include-urandom"],
)
@needs_cxx
def test_a_hostile_compile_is_the_program_s_compile_error(grader: CodeGrader, program: str) -> None:
    (result,) = score(grader, cpp(program, [("1 2\n", "3\n")]))
    assert result.status is Status.OK and result.reward == 0.0, result.detail
    assert result.logs["code/compile_error"] == 1.0, result.detail
    (result,) = score(grader, cpp(ADD_CPP, [("1 2\n", "3\n")]))
    assert result.reward == 1.0, result.detail


@needs_cxx
def test_a_group_of_a_never_ending_compile_compiles_it_once() -> None:
    """A compile that runs out of time is not cached (under less load it might finish); the copies
    of a GRPO group that waited for it compiled it again, one after another, holding the compile
    slots (every other sample's compile) for the group's size times the compile time limit."""
    grader = CodeGrader(CodeConfig(workers=4, warm_sandboxes=2, compile_time_limit_s=1.0))
    try:
        results = score(grader, *[cpp(FOREVER_COMPILE, [("", "0\n")]) for _ in range(4)])
        misses = grader.compile_cache.misses
    finally:
        asyncio.run(grader.aclose())
    assert all(r.status is Status.OK and r.reward == 0.0 for r in results), [r.detail for r in results]
    assert all(r.logs["code/compile_error"] == 1.0 for r in results), [r.detail for r in results]
    assert misses == 1


# ---------------------------------------------------------------- the harness's clock

STOPS_ITS_HARNESS_CPP = r"""
#include <bits/stdc++.h>
#include <signal.h>
#include <unistd.h>
int main() { long long a, b; std::cin >> a >> b;
  pid_t harness = getppid();
  kill(harness, SIGSTOP);
  if (fork() == 0) { usleep(1600000); kill(harness, SIGCONT); _exit(0); }
  volatile long x = 0; while (std::clock() < 3 * CLOCKS_PER_SEC / 2) x++;
  std::cout << a + b << "\n"; }
"""
STOPS_ITS_HARNESS_PY = (
    "import os, signal, sys, time\n"
    "a, b = map(int, sys.stdin.read().split())\n"
    "harness = os.getppid()\n"
    "os.kill(harness, signal.SIGSTOP)\n"
    "if os.fork() == 0:\n"
    "    time.sleep(1.6)\n"
    "    os.kill(harness, signal.SIGCONT)\n"
    "    os._exit(0)\n"
    "while time.process_time() < 1.5:\n"
    "    pass\n"
    "print(a + b)\n"
)


@pytest.mark.parametrize("language", ["cpp", "python"])
def test_a_run_that_stops_its_harness_still_has_its_time_limit(grader: CodeGrader, language: str) -> None:
    """The program stops the harness (SIGSTOP), computes past its 1 s limit, and has a helper let
    the harness go on (SIGCONT) once it is done: the harness woke to an exit status waiting and
    passed it (the grader's own deadline allows the supervision slack on top). The program spins
    on its own CPU clock, so a loaded machine cannot keep it under its CPU limit."""
    if language == "cpp" and shutil.which("g++") is None:
        pytest.skip("needs g++ (Debian g++)")
    cases = [("1 2\n", "3\n"), ("5 6\n", "11\n")]
    if language == "cpp":
        sample = cpp(STOPS_ITS_HARNESS_CPP, cases, time_limit_s=1.0)
    else:
        sample = stdio(STOPS_ITS_HARNESS_PY, cases, time_limit_s=1.0)
    (result,) = score(grader, sample)
    assert result.status is Status.OK and result.reward == 0.0, result.detail
    assert "timeout" in result.detail, result.detail
    (result,) = score(grader, stdio(ADD, cases))
    assert result.reward == 1.0, result.detail
    assert_clean(grader)
