"""What the candidate's own output causes is a verdict; what the grader's machinery causes is not.

A 5000-digit answer, 10**400 against a float, a 30 MB reply of nested lists: wrong answers (or an
output limit), never GRADER_ERROR and never a frozen, bloated service. A sandbox that cannot start:
GRADER_ERROR in every test kind, never a silent zero.
"""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.session import Session
from services.reward_rules.code.testrun import Budget, run_tests
from services.reward_rules.code.tests_spec import CodeLabel
from tests.reward_rules.code_fixtures import (
    assert_clean,
    asserts,
    call,
    check,
    code_grader,
    label,
    rss_mb,
    score,
    stdio,
)

__all__ = ["code_grader"]


def _tolerant(sample: Sample, tolerance: float) -> Sample:
    """The sample with `tests.tolerance` set (the label option that allows number error)."""
    parsed = json.loads(sample.label)
    parsed["tests"]["tolerance"] = tolerance
    return Sample(response=sample.response, label=json.dumps(parsed))


def test_huge_numbers_from_the_candidate_are_wrong_answers(code_grader: CodeGrader) -> None:
    results = score(
        code_grader,
        stdio("print('9' * 5000)", [("", "1" * 5000 + "\n")]),
        _tolerant(stdio("print('9' * 5000)", [("", "0.5\n")]), 1e-6),
        call("def f():\n    return 10 ** 400\n", "f", [([], 1.5)]),
        call("def f():\n    return 10 ** 5000\n", "f", [([], 3)]),
        _tolerant(call("def f():\n    return 10 ** 400\n", "f", [([], 1.5)]), 1e-6),
        check(
            "def f():\n    return 10 ** 400\n", "f", "def check(candidate):\n    assert candidate() == 1.5\n"
        ),
    )
    assert [r.status for r in results] == [Status.OK] * 6, [r.detail for r in results]
    assert [r.reward for r in results] == [0.0] * 6, [r.detail for r in results]
    verdicts = ("wrong answer", "output limit")  # 10**5000 is longer than any reply 3 could need
    assert all(any(v in r.detail for v in verdicts) for r in results), [r.detail for r in results]


def _nested_reply_programs() -> list[str]:
    returned = "def f(x):\n    return [[] for _ in range(4_000_000)]\n"
    forged = (
        'import os, struct\ndef f(x):\n    body = b\'{"ok":true,"value":{"L":[\' + b\'{"L":[]},\' * 3_000_000 + b\'1]}}\'\n'
        "    frame = struct.pack('>I', len(body)) + body\n"
        "    for fd in range(3, 16):\n        try:\n            os.write(fd, frame)\n        except OSError:\n            pass\n"
        "    return x\n"
    )
    return [returned, forged]


@pytest.mark.parametrize("program", _nested_reply_programs(), ids=["returned", "forged-frame"])
def test_a_huge_nested_reply_is_a_verdict_and_costs_the_service_nothing(
    code_grader: CodeGrader, program: str
) -> None:
    before = rss_mb()
    results = score(
        code_grader,
        call(program, "f", [([1], 1)]),
        check(program, "f", "def check(candidate):\n    assert candidate(1) == 1\n"),
        asserts(program, "f", ["assert f(1) == 1"]),
    )
    assert [r.status for r in results] == [Status.OK] * 3, [r.detail for r in results]
    assert [r.reward for r in results] == [0.0] * 3, [r.detail for r in results]
    assert rss_mb() - before < 150  # nothing of a 30 MB frame was parsed here (it costs ~1 GB)
    assert_clean(code_grader)


def test_a_big_value_a_test_can_use_still_reaches_the_judge(code_grader: CodeGrader) -> None:
    program = "def f(n):\n    return list(range(n))\n"
    test = "def check(candidate):\n    assert candidate(100000) == list(range(100000))\n"
    (result,) = score(code_grader, check(program, "f", test))
    assert result.reward == 1.0, result.detail


def test_iterators_and_fractions_compare_by_value(code_grader: CodeGrader) -> None:
    mapped = "def f(xs):\n    return map(lambda x: x * 2, xs)\n"
    generated = "def f(xs):\n    return (x * 2 for x in xs)\n"
    fraction = "from fractions import Fraction\ndef f(xs):\n    return Fraction(sum(xs), 2)\n"
    test = "def check(candidate):\n    assert candidate([1, 2]) == [2, 4]\n"
    results = score(
        code_grader,
        call(mapped, "f", [([[1, 2]], [2, 4])]),
        call(generated, "f", [([[1, 2]], [2, 4])]),
        check(mapped, "f", test),
        check(generated, "f", test),
        call(fraction, "f", [([[1, 2]], 1.5)]),
        check(fraction, "f", "def check(candidate):\n    assert candidate([1, 2]) == 1.5\n"),
        call(fraction, "f", [([[1, 2]], 2)]),
    )
    assert [r.reward for r in results] == [1.0] * 6 + [0.0], [r.detail for r in results]


class _FailingBwrap:
    """A `bwrap` that fails as it does when namespaces run out (a real process, not a stub)."""

    @staticmethod
    def install(directory: Path) -> None:
        fake = directory / "bwrap"
        fake.write_text(
            "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Resource temporarily unavailable' >&2\nexit 1\n"
        )
        fake.chmod(0o755)


@pytest.fixture
def failing_bwrap_dir() -> Iterator[Path]:
    """A directory the sandbox's unprivileged uid can read (pytest's tmp_path is root-only)."""
    directory = Path(tempfile.mkdtemp(prefix="arbiter-fake-bwrap-"))
    directory.chmod(0o755)
    _FailingBwrap.install(directory)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_sandbox_that_cannot_start_is_a_grader_error_in_every_kind(
    monkeypatch: pytest.MonkeyPatch, failing_bwrap_dir: Path
) -> None:
    monkeypatch.setenv("PATH", f"{failing_bwrap_dir}:/usr/bin:/bin")
    grader = CodeGrader(CodeConfig(workers=2, warm_sandboxes=1))
    add = "def add(a, b):\n    return a + b\n"
    try:
        results = score(
            grader,
            stdio("print(3)", [("", "3\n")]),
            call(add, "add", [([1, 2], 3)]),
            asserts(add, "add", ["assert add(1, 2) == 3"]),
            check(add, "add", "def check(candidate):\n    assert candidate(1, 2) == 3\n"),
        )
    finally:
        asyncio.run(grader.aclose())
    assert [r.status for r in results] == [Status.GRADER_ERROR] * 4, [r.detail for r in results]
    assert all("Creating new namespace failed" in r.detail for r in results), [r.detail for r in results]


def _report(grader: CodeGrader, program: str, tests: dict[str, Any], budget_s: float) -> list[str]:
    """Runs one sample's tests on the grader's real pool; the per-test outcomes, described."""
    grader._ensure_started()
    assert grader._pool is not None
    parsed = CodeLabel.model_validate_json(label(tests))
    session = Session(grader._pool, program, 128 << 20, 2, "__main__")
    budget = Budget(time_limit_s=5.0, max_output_bytes=1 << 20, sample_deadline=time.monotonic() + budget_s)
    try:
        report = run_tests(session, parsed, budget, grader._label_runs)
    finally:
        session.close()
    return [o.describe() for o in report.outcomes]


def test_a_program_that_keeps_timing_out_stops_holding_its_worker(code_grader: CodeGrader) -> None:
    cases = [{"input": "", "output": "1"} for _ in range(5)]
    tests = {"kind": "stdio", "cases": cases}
    outcomes = _report(code_grader, "while True:\n    pass\n", tests, 60.0)
    # the old grader ran all five to their limit (25 s of a worker); two are enough to know
    assert outcomes[:2] == ["case 1: timeout (5 s)", "case 2: timeout (5 s)"], outcomes
    assert outcomes[2:] == [f"case {i}: timeout (not run: earlier tests timed out)" for i in (3, 4, 5)]


def test_loading_the_program_counts_against_the_sample_budget(code_grader: CodeGrader) -> None:
    program = "import time\ntime.sleep(3)\ndef f(x):\n    return x\n"
    tests = {"kind": "call", "entry_point": "f", "cases": [{"args": [1], "expected": 1}]}
    outcomes = _report(code_grader, program, tests, 1.0)
    assert outcomes[0].startswith("case 1: timeout"), outcomes  # the old grader gave it 5 s: a pass


def test_a_compiler_missing_from_the_host_is_a_grader_error_not_a_compile_error(tmp_path: Path) -> None:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, cxx=str(tmp_path / "no-g++")))
    spec = {"kind": "stdio", "cases": [{"input": "1 2\n", "output": "3\n"}]}
    label = json.dumps({"grader": "code", "language": "cpp", "tests": spec})
    program = "```cpp\n#include <iostream>\nint main(){int a,b;std::cin>>a>>b;std::cout<<a+b;}\n```"
    try:
        (result,) = score(grader, Sample(response=program, label=label))
    finally:
        asyncio.run(grader.aclose())
    assert result.status is Status.GRADER_ERROR, result.detail
    assert "compiler" in result.detail
