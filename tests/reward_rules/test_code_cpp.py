"""C++ through the public grader: compiled in the sandbox once per distinct source, run per test;
every outcome a program can cause, compile errors included, is a verdict. Built-in checkers."""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeConfig, CodeGrader
from tests.reward_rules.code_fixtures import assert_clean, score

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (Debian g++)")

ADD = '#include <bits/stdc++.h>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }\n'
CASES = [("1 2\n", "3\n"), ("5 6\n", "11\n")]


def cpp(program: str, cases: list[tuple[str, str]], fence: str = "cpp", **tests: Any) -> Sample:
    spec = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases], **tests}
    label = {"grader": "code", "language": "cpp", "tests": spec, "time_limit_s": 2.0}
    return Sample(response=f"Here:\n```{fence}\n{program}```\n", label=json.dumps(label))


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=2, warm_sandboxes=2, compile_time_limit_s=20.0))
    yield grader
    asyncio.run(grader.aclose())


@pytest.mark.parametrize(
    ("name", "program", "reason"),
    [
        ("wrong answer", ADD.replace("a + b", "a - b"), "wrong answer"),
        ("time limit", "int main() { volatile long x = 0; while (true) x++; }\n", "timeout"),
        (
            "memory limit",
            "#include <cstdlib>\n#include <cstring>\nint main() { for (;;) { char* p = (char*)malloc(1 << 24); memset(p, 1, 1 << 24); } }\n",
            "memory limit",
        ),
        ("segfault", "int main() { int* p = nullptr; return *p; }\n", "runtime error"),
        ("exit status", '#include <cstdio>\nint main() { puts("3"); return 1; }\n', "runtime error"),
        ("compile error", "int main() { return x; }\n", "compile error"),
        ("hostile include", "#include </dev/zero>\nint main() {}\n", "compile error"),
        (
            "template explosion",
            "template<int N> struct F { static const int v = F<N-1>::v + F<N-2>::v; };\ntemplate<> struct F<0> { static const int v = 0; };\n"
            "template<> struct F<1> { static const int v = 1; };\nint main() { return F<100000>::v; }\n",
            "compile error",
        ),
    ],
)
def test_every_failure_is_a_verdict(grader: CodeGrader, name: str, program: str, reason: str) -> None:
    sample = cpp(program, CASES)
    if name == "memory limit":
        sample = Sample(
            response=sample.response,
            label=sample.label.replace('"time_limit_s"', '"memory_limit_mb": 64, "time_limit_s"'),
        )
    (result,) = score(grader, sample)
    assert result.status is Status.OK and result.reward == 0.0, result.detail
    assert reason in result.detail, result.detail
    assert result.logs["code/compile_error"] == float(reason == "compile error")


def test_a_right_program_passes_and_compiles_once(grader: CodeGrader) -> None:
    program = ADD.replace("int main()", "// variant for this test\nint main()")
    before = (grader._compile_cache.hits, grader._compile_cache.misses)
    results = score(grader, *[cpp(program, CASES) for _ in range(6)])
    assert [r.reward for r in results] == [1.0] * 6, [r.detail for r in results]
    hits, misses = grader._compile_cache.hits - before[0], grader._compile_cache.misses - before[1]
    assert (hits, misses) == (5, 1)  # concurrent samples waited for the one compile
    assert_clean(grader)


def test_the_binary_follows_the_program_into_a_fresh_sandbox(grader: CodeGrader) -> None:
    program = (
        "#include <bits/stdc++.h>\n#include <signal.h>\n#include <unistd.h>\n"
        "int main() { long long a, b; std::cin >> a >> b; if (a == 1) kill(getppid(), SIGKILL); std::cout << a + b << std::endl; }\n"
    )
    (result,) = score(grader, cpp(program, CASES))
    assert result.score == 0.5, result.detail  # case 1 killed its harness; case 2 ran in a new sandbox


def test_the_cpp_block_is_picked(grader: CodeGrader) -> None:
    response = f"```cpp\n{ADD}```\nand in Python, for comparison:\n```python\nprint(3)\n```\n"
    label = json.loads(cpp(ADD, CASES).label)
    (result,) = score(grader, Sample(response=response, label=json.dumps(label)))
    assert result.reward == 1.0, result.detail


def test_function_tests_are_python_only(grader: CodeGrader) -> None:
    label = {
        "grader": "code",
        "language": "cpp",
        "tests": {"kind": "call", "entry_point": "f", "cases": [{"args": [], "expected": 1}]},
    }
    (result,) = score(grader, Sample(response=f"```cpp\n{ADD}```", label=json.dumps(label)))
    assert result.status is Status.INVALID_INPUT


@pytest.mark.parametrize(
    ("checker", "expected", "printed", "ok"),
    [
        ("lines_unordered", "1 2\n3 4\n", "3  4\n1 2\n", True),
        ("lines_unordered", "1 2\n3 4\n", "3 4\n3 4\n", False),
        ("yes_no", "YES\nNO\n", "yes\nNo\n", True),
        ("yes_no", "YES\n", "NO\n", False),
        ("float", "0.333333\n", "0.3333333333\n", True),
        ("float", "0.333333\n", "0.34\n", False),
        ("tokens", "0.333333\n", "0.3333333333\n", False),
    ],
)
def test_builtin_checkers(grader: CodeGrader, checker: str, expected: str, printed: str, ok: bool) -> None:
    program = f"#include <cstdio>\nint main() {{ fputs({json.dumps(printed)}, stdout); }}\n"
    (result,) = score(grader, cpp(program, [("", expected)], checker=checker))
    assert result.reward == float(ok), result.detail


# A "print any valid answer" problem: two numbers whose sum is n (many answers are right).
ANY_PAIR_CHECKER = (
    "def check(input, expected, output):\n"
    "    n = int(input)\n"
    "    a, b = map(int, output.split())\n"
    "    return a + b == n and a >= 0 and b >= 0\n"
)


@pytest.mark.parametrize(
    ("printed", "ok"),
    [("7 3", True), ("0 10", True), ("5 5", True), ("11 -1", False), ("abc", False), ("", False)],
)
def test_a_custom_checker_accepts_any_valid_answer(grader: CodeGrader, printed: str, ok: bool) -> None:
    program = f"#include <cstdio>\nint main() {{ puts({json.dumps(printed)}); }}\n"
    sample = cpp(program, [("10\n", "5 5\n")], checker="custom", checker_code=ANY_PAIR_CHECKER)
    (result,) = score(grader, sample)
    assert result.status is Status.OK and result.reward == float(ok), result.detail


def test_a_custom_checker_runs_in_a_judge_sandbox(grader: CodeGrader, tmp_path: Any) -> None:
    marker = f"/tmp/arbiter-checker-{id(tmp_path)}"
    hostile = f"import os\nopen({marker!r}, 'w').write('x')\ndef check(input, expected, output):\n    return not os.path.exists('/work')\n"
    program = '#include <cstdio>\nint main() { puts("5 5"); }\n'
    results = score(
        grader,
        cpp(program, [("10\n", "5 5\n")], checker="custom", checker_code=hostile),
        cpp(
            program,
            [("10\n", "5 5\n")],
            checker="custom",
            checker_code="def check(i, e, o):\n    return helper(o)\n",
        ),
    )
    assert results[0].reward == 1.0, results[0].detail
    assert not os.path.exists(marker)
    assert results[1].status is Status.INVALID_INPUT and "helper" in results[1].detail


def test_a_run_cannot_change_the_program_for_the_next_test(grader: CodeGrader) -> None:
    """The binary is sealed: writing it (through /proc/self/exe) fails, and a file planted where a
    binary might be looked up is never run. Test 2 prints what the real program prints."""
    program = (
        "#include <bits/stdc++.h>\n#include <fcntl.h>\n#include <unistd.h>\n#include <sys/stat.h>\n"
        "int main() { int t; std::cin >> t;\n"
        "  if (t == 1) {\n"
        '    int fd = open("/proc/self/exe", O_WRONLY); if (fd >= 0) write(fd, "#!/bin/sh\\necho replaced\\n", 24);\n'
        '    chmod("/proc/self/exe", 0);\n'
        '    for (const char* p : {".prog", "/tmp/.prog", "prog", "/tmp/prog"}) { FILE* f = fopen(p, "w"); if (f) { fputs("#!/bin/sh\\necho replaced\\n", f); fclose(f); chmod(p, 0755); } }\n'
        '    puts(fd >= 0 ? "opened" : "sealed"); return 0; }\n'
        '  puts("genuine"); }\n'
    )
    (result,) = score(grader, cpp(program, [("1\n", "sealed\n"), ("2\n", "genuine\n")]))
    assert result.reward == 1.0, result.detail


def test_each_test_starts_with_nothing_of_the_last(grader: CodeGrader) -> None:
    """A daemon and files of test 1 (a memo, a tmpfs filled to the brim) are gone for test 2."""
    program = (
        "#include <bits/stdc++.h>\n#include <dirent.h>\n#include <unistd.h>\n#include <sys/wait.h>\n"
        'int procs() { int n = 0; DIR* d = opendir("/proc"); while (auto e = readdir(d)) n += isdigit(e->d_name[0]) != 0; closedir(d); return n; }\n'
        "int main() { int t; std::cin >> t;\n"
        '  bool memo = access("memo", F_OK) == 0 || access("daemon", F_OK) == 0;\n'
        '  std::string block(1 << 20, \'x\'); FILE* f = fopen("memo", "w"); int mb = 0;\n'
        "  while (f && mb < 40 && fwrite(block.data(), 1, block.size(), f) == block.size()) mb++;\n"
        "  if (f) fclose(f);\n"
        '  if (t == 1) { if (fork() == 0) { setsid(); if (fork() == 0) { for (;;) { FILE* g = fopen("daemon", "w"); if (g) fclose(g); usleep(1000); } } _exit(0); } wait(nullptr); usleep(20000); }\n'
        "  else usleep(20000);\n"
        '  printf("%d %s %d\\n", t == 1 ? 0 : procs(), memo ? "kept" : "clean", mb); }\n'
    )
    # test 2 sees bwrap's init, the harness, the sample's fork of it and itself
    (result,) = score(grader, cpp(program, [("1\n", "0 clean 40\n"), ("2\n", "4 clean 40\n")]))
    assert result.reward == 1.0, result.detail
    assert_clean(grader)


def test_a_memory_kill_fails_only_its_own_test(grader: CodeGrader) -> None:
    program = (
        "#include <bits/stdc++.h>\nint main() { int t; std::cin >> t;\n"
        "  if (t == 1) for (;;) { char* p = (char*)malloc(1 << 24); memset(p, 1, 1 << 24); }\n"
        '  puts("ok"); }\n'
    )
    sample = cpp(program, [("1\n", "ok\n"), ("2\n", "ok\n")])
    label = json.loads(sample.label)
    label["memory_limit_mb"] = 64
    (result,) = score(grader, Sample(response=sample.response, label=json.dumps(label)))
    assert result.score == 0.5 and "case 1: memory limit" in result.detail, result.detail


def test_large_inputs_go_in_several_requests(grader: CodeGrader) -> None:
    """Inputs of a sample over a MiB go to the sandbox a few at a time (the harness holds a request's
    inputs while it runs them); every test still gets its verdict, in order."""
    program = '#include <cstdio>\nint main() { long long x, s = 0; while (scanf("%lld", &x) == 1) s += x; printf("%lld\\n", s); }\n'
    cases = []
    for k in range(4):
        numbers = [k * 1000 + i for i in range(120_000)]  # ~0.8 MB each
        cases.append((" ".join(map(str, numbers)) + "\n", f"{sum(numbers) + (k == 2)}\n"))
    (result,) = score(grader, cpp(program, cases))
    assert result.score == 0.75 and "case 3: wrong answer" in result.detail, result.detail
