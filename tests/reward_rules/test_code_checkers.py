"""C++ checker programs from the label (`"checker": "testlib"`), through the public grader: built once
per distinct source, run in a sandbox of their own as `checker input output answer`, and every
exit status, crash or hang a verdict (the label's fault only when it fails on its own answer)."""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeConfig, CodeGrader
from tests.reward_rules.code_fixtures import assert_clean, fenced, score

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (Debian g++)")

# "Print two non-negative numbers whose sum is n": many answers are right.
PAIR_CHECKER = """#include <cstdio>
int main(int argc, char** argv) {
  if (argc != 4) return 3;
  FILE* in = fopen(argv[1], "r"); FILE* out = fopen(argv[2], "r"); FILE* ans = fopen(argv[3], "r");
  if (!in || !out || !ans) return 3;
  long long n, a, b;
  if (fscanf(in, "%lld", &n) != 1) return 3;
  if (fscanf(out, "%lld %lld", &a, &b) != 2) { fprintf(stderr, "expected two numbers\\n"); return 2; }
  CHECKS
  if (a < 0 || b < 0 || a + b != n) { fprintf(stderr, "%lld + %lld is not %lld\\n", a, b, n); return 1; }
  return 0;
}
"""

# A stand-in for testlib.h (not packaged anywhere this project installs from): the calls a
# checker makes, with testlib's exit statuses. The grader puts whatever testlib.h the host has
# beside the checker's source; this one shows that path works.
FAKE_TESTLIB = """#pragma once
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
enum TResult { _ok = 0, _wa = 1, _pe = 2, _fail = 3 };
[[noreturn]] inline void quitf(TResult r, const char* fmt, ...) { va_list a; va_start(a, fmt); vfprintf(stderr, fmt, a); va_end(a); fputc('\\n', stderr); std::exit(r); }
struct InStream { FILE* f = nullptr; TResult bad = _pe;
  long long readLong() { long long x; if (!f || std::fscanf(f, "%lld", &x) != 1) quitf(bad, "expected an integer"); return x; } };
InStream inf, ouf, ans;
inline void registerTestlibCmd(int argc, char* argv[]) {
  if (argc < 4) quitf(_fail, "usage: checker input output answer");
  inf.f = std::fopen(argv[1], "r"); ouf.f = std::fopen(argv[2], "r"); ans.f = std::fopen(argv[3], "r");
  inf.bad = ans.bad = _fail;
}
"""

TESTLIB_CHECKER = """#include "testlib.h"
int main(int argc, char* argv[]) {
  registerTestlibCmd(argc, argv);
  long long n = inf.readLong(), a = ouf.readLong(), b = ouf.readLong();
  if (a < 0 || b < 0 || a + b != n) quitf(_wa, "%lld + %lld is not %lld", a, b, n);
  quitf(_ok, "a valid pair");
}
"""


def prints(text: str) -> str:
    return f"```cpp\n#include <cstdio>\nint main() {{ puts({json.dumps(text)}); }}\n```\n"


def sample(response: str, checker: str, cases: list[tuple[str, str]] | None = None, **label: Any) -> Sample:
    cases = cases or [("10\n", "5 5\n")]
    tests = {
        "kind": "stdio",
        "cases": [{"input": i, "output": o} for i, o in cases],
        "checker": "testlib",
        "checker_code": checker,
    }
    body = {"grader": "code", "language": "cpp", "tests": tests, "time_limit_s": 2.0, **label}
    return Sample(response=response, label=json.dumps(body))


@pytest.fixture(scope="module")
def header(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("testlib") / "testlib.h"
    path.write_text(FAKE_TESTLIB)
    return path


@pytest.fixture(scope="module")
def grader(header: Path) -> Iterator[CodeGrader]:
    config = CodeConfig(workers=2, warm_sandboxes=2, compile_time_limit_s=20.0, testlib_header=str(header))
    grader = CodeGrader(config)
    yield grader
    asyncio.run(grader.aclose())


@pytest.mark.parametrize(
    ("printed", "ok", "said"),
    [
        ("7 3", True, ""),
        ("0 10", True, ""),
        ("5 5", True, ""),
        ("11 -1", False, "the checker: 11 + -1 is not 10"),
        ("4 4", False, "the checker: 4 + 4 is not 10"),
        ("abc", False, "the checker: presentation error: expected two numbers"),
        ("", False, "presentation error"),
    ],
)
def test_a_checker_program_accepts_any_valid_answer(
    grader: CodeGrader, printed: str, ok: bool, said: str
) -> None:
    (result,) = score(grader, sample(prints(printed), PAIR_CHECKER.replace("CHECKS", "")))
    assert result.status is Status.OK and result.reward == float(ok), result.detail
    assert said in result.detail


def test_a_python_program_gets_a_cpp_checker_too(grader: CodeGrader) -> None:
    label = json.loads(sample("", PAIR_CHECKER.replace("CHECKS", "")).label)
    label.pop("language")
    (result,) = score(grader, Sample(response=fenced("print(2, 8)"), label=json.dumps(label)))
    assert result.reward == 1.0, result.detail


def test_the_checker_compiles_once_for_a_group(grader: CodeGrader) -> None:
    checker = PAIR_CHECKER.replace("CHECKS", "// compiled once")
    before = grader.compile_cache.hits, grader.compile_cache.misses
    programs = [
        prints(f"{k} {10 - k}").replace("```cpp\n", f"```cpp\n// group member {k}\n") for k in range(6)
    ]
    results = score(grader, *[sample(program, checker) for program in programs])
    assert [r.reward for r in results] == [1.0] * 6, [r.detail for r in results]
    hits, misses = grader.compile_cache.hits - before[0], grader.compile_cache.misses - before[1]
    assert misses == 1 + 6 and hits == 5  # the checker once; each candidate's distinct program once


def test_a_crash_or_hang_of_the_checker_fails_only_that_test(grader: CodeGrader) -> None:
    checker = PAIR_CHECKER.replace(
        "CHECKS",
        "if (a == 0) { volatile int* p = nullptr; *p = 1; }\n  if (a == 1) for (volatile long i = 0;; i++);\n  if (a == 2) return 42;",
    )
    program = '```cpp\n#include <cstdio>\nint main() { int n; scanf("%d", &n); printf("%d %d\\n", n % 10, n - n % 10); }\n```\n'
    cases = [("20\n", "0 20\n"), ("11\n", "1 10\n"), ("12\n", "2 10\n"), ("13\n", "3 10\n")]
    (result,) = score(grader, sample(program, checker, cases, time_limit_s=1.0))
    assert result.status is Status.OK and result.score == 0.25, result.detail
    assert "case 1: wrong answer (the checker crashed on this output" in result.detail
    assert result.logs["code/timeouts"] == 1.0 and result.logs["code/wrong"] == 2.0, result.detail
    assert_clean(grader)


def test_a_checker_failure_is_the_label_s_only_when_it_fails_on_its_own_answer(grader: CodeGrader) -> None:
    sloppy = PAIR_CHECKER.replace(
        "CHECKS", 'if (a > 100) { fprintf(stderr, "a out of range\\n"); return 3; }'
    )
    (candidate,) = score(grader, sample(prints("200 -190"), sloppy))
    assert candidate.status is Status.OK and candidate.reward == 0.0, candidate.detail
    assert "the checker failed on this output: a out of range" in candidate.detail
    broken = PAIR_CHECKER.replace("CHECKS", 'fprintf(stderr, "jury answer is wrong\\n"); return 3;')
    (label,) = score(grader, sample(prints("7 3"), broken))
    assert label.status is Status.INVALID_INPUT and "jury answer is wrong" in label.detail, label.detail


def test_a_checker_that_does_not_compile_is_a_bad_label(grader: CodeGrader) -> None:
    (result,) = score(grader, sample(prints("7 3"), "int main() { return x; }\n"))
    assert result.status is Status.INVALID_INPUT and "checker does not compile" in result.detail, (
        result.detail
    )
    (hostile,) = score(grader, sample(prints("7 3"), "#include </dev/zero>\nint main() {}\n"))
    assert hostile.status is Status.INVALID_INPUT, hostile.detail


def test_a_hostile_checker_reaches_neither_the_candidate_nor_the_host(
    grader: CodeGrader, tmp_path: Path
) -> None:
    """It sees only its own sandbox (bwrap's init, the harness, its sample's fork, itself), cannot write outside it,
    and what it leaves (a daemon, files) is gone for the next sample's runs."""
    marker = tmp_path / "checker-was-here"
    checker = (
        "#include <cstdio>\n#include <cctype>\n#include <dirent.h>\n#include <unistd.h>\n"
        "int main(int argc, char** argv) {\n"
        '  int n = 0; DIR* d = opendir("/proc"); while (auto e = readdir(d)) n += isdigit(e->d_name[0]) != 0; closedir(d);\n'
        f'  FILE* f = fopen("{marker}", "w"); bool wrote = f != nullptr;\n'
        '  FILE* g = fopen("left-behind", "w"); if (g) fclose(g);\n'
        "  if (fork() == 0) { setsid(); if (fork() == 0) for (;;) sleep(1); _exit(0); }\n"
        '  bool host = access("/work", F_OK) == 0 || access("/root", F_OK) == 0;\n'
        "  return n == 4 && !wrote && !host ? 0 : 1;\n"
        "}\n"
    )
    results = score(grader, *[sample(prints("7 3"), checker) for _ in range(3)])
    assert [r.reward for r in results] == [1.0] * 3, [r.detail for r in results]
    assert not marker.exists()
    probe = '```cpp\n#include <cstdio>\n#include <unistd.h>\nint main() { puts(access("left-behind", F_OK) == 0 ? "0 0" : "4 6"); }\n```\n'
    (after,) = score(grader, sample(probe, PAIR_CHECKER.replace("CHECKS", "")))
    assert after.reward == 1.0, after.detail
    assert_clean(grader)


def test_testlib_checkers_build_with_the_host_s_testlib_h(grader: CodeGrader) -> None:
    results = score(
        grader,
        sample(prints("3 7"), TESTLIB_CHECKER),
        sample(prints("3 6"), TESTLIB_CHECKER),
        sample(prints("x"), TESTLIB_CHECKER),
    )
    assert [r.reward for r in results] == [1.0, 0.0, 0.0], [r.detail for r in results]
    assert "3 + 6 is not 10" in results[1].detail and "presentation error" in results[2].detail


def test_without_testlib_h_on_the_host_a_testlib_checker_is_a_grader_error(tmp_path: Path) -> None:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, testlib_header=str(tmp_path / "missing.h")))
    try:
        (result,) = score(grader, sample(prints("3 7"), TESTLIB_CHECKER))
        assert result.status is Status.GRADER_ERROR and "testlib.h" in result.detail, result.detail
        (plain,) = score(grader, sample(prints("3 7"), PAIR_CHECKER.replace("CHECKS", "")))
        assert plain.reward == 1.0, plain.detail  # checkers that do not include it still run
    finally:
        asyncio.run(grader.aclose())
