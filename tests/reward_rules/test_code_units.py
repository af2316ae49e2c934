"""The code grader's parts: extraction, comparison, the value codec, labels, scoring and modes."""

# ruff: noqa: E501  (candidate programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import logging
import math
from pathlib import Path

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeConfig, CodeGrader, SandboxUnavailableError
from services.reward_rules.code.extract import extract_program
from services.reward_rules.code.harness import CodecError, Opaque, decode_value, encode_value
from services.reward_rules.code.output_match import describe_value, stdio_mismatch, values_match
from tests.reward_rules.code_fixtures import asserts, call, check, code_grader, label, score, stdio

__all__ = ["code_grader"]

# ---------------------------------------------------------------- extraction


def test_last_fenced_block_after_thinking() -> None:
    response = "<think>```python\nprint('draft')\n```</think>text\n```python\nprint(1)\n```\nthen\n```\nprint(2)\n```"
    assert extract_program(response) == "print(2)\n"


def test_unclosed_fence_runs_to_the_end_and_no_fence_is_the_whole_answer() -> None:
    assert extract_program("ok\n```python\nx = 1\nprint(x)") == "x = 1\nprint(x)\n"
    assert extract_program("print(3)") == "print(3)\n"
    assert extract_program("<think>never closed ```python\nprint(1)\n```") == ""
    assert extract_program("```python\nprint(1)\n```<|im_end|>") == "print(1)\n"


# ---------------------------------------------------------------- comparison


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ("3\n", "3", True),
        ("1 2\n3\n", "1 2  \r\n3\r\n\n\n", True),
        ("0.5\n", "0.50000001\n", False),  # exact unless the label sets a tolerance
        ("10\n", "10.0\n", False),
        ("Yes\n", "yes\n", False),
        ("1 2\n", "1 2 3\n", False),
        ("1\n2\n", "1\n", False),
        ("1e-7\n", "0\n", False),
        ("00000101\n", "101\n", False),
        ("101\n", "00000101\n", False),
        ("7\n", "+7\n", False),
        ("007\n", "7\n", False),
        ("0\n", "-0\n", False),
        ("1e400\n", "1e999\n", False),
        ("1" * 5000 + "\n", "1" * 4999 + "2\n", False),  # no int() on the candidate's digits
    ],
)
def test_stdio_comparison_is_exact_by_default(expected: str, actual: str, ok: bool) -> None:
    assert (stdio_mismatch(expected, actual) is None) == ok


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ("0.5\n", "0.50000001\n", True),
        ("0.5\n", "0.51\n", False),
        ("1e-7\n", "0\n", True),
        ("5\n", "5.0000004\n", False),  # an integer token stays exact
        ("1e400\n", "1e999\n", False),  # both overflow: not close, different numbers
        ("7\n", "+7\n", False),
    ],
)
def test_stdio_tolerance_is_an_explicit_option(expected: str, actual: str, ok: bool) -> None:
    assert (stdio_mismatch(expected, actual, 1e-6) is None) == ok


def test_values_never_raise_on_huge_numbers() -> None:
    from fractions import Fraction

    assert not values_match(10**400, 1.5)
    assert not values_match(10**400, 1.5, 1e-6)
    assert not values_match(5.0000004, 5, 1e-6)
    assert values_match(5.0, 5) and values_match(Fraction(1, 2), 0.5) and values_match(Fraction(3, 1), 3)
    assert not values_match(0.50000001, 0.5) and values_match(0.50000001, 0.5, 1e-6)
    assert describe_value(10**5000).startswith("<a int")


def test_value_matching_is_structural() -> None:
    assert values_match((1, [2.0, "a"]), [1, [2, "a"]]) and not values_match([2.0000000001], [2])
    assert not values_match(1, True) and not values_match(True, 1)
    assert values_match({"a": math.nan}, {"a": math.nan})
    assert not values_match("1", 1) and not values_match(None, 0)
    assert not values_match(Opaque("E"), 3) and not values_match(Opaque("E"), Opaque("E"))


# ---------------------------------------------------------------- codec


def test_codec_round_trips_builtin_values() -> None:
    value: list[object] = [
        None,
        True,
        3,
        -(10**40),
        1.5,
        math.inf,
        "é\ud800",
        b"\x00\xff",
        2j,
        (1, 2),
        {1, 2},
        frozenset({3}),
    ]
    value.append({1: "a", (2, 3): [4]})
    decoded = decode_value(json.loads(json.dumps(encode_value(value))))
    assert decoded == value and type(decoded[9]) is tuple


def test_codec_flattens_subclasses_and_marks_foreign_objects() -> None:
    class Sneaky(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    assert type(decode_value(encode_value(Sneaky(4)))) is int
    assert decode_value(encode_value(Sneaky(4))) != 5
    assert isinstance(decode_value(encode_value(object())), Opaque)


@pytest.mark.parametrize(
    "data",
    [{"L": 1}, {"Q": []}, {"L": [], "T": []}, [1], {"S": [{"L": []}]}, {"C": ["a", 1]}, {"I": 3}],
)
def test_codec_rejects_malformed_data(data: object) -> None:
    with pytest.raises(CodecError):
        decode_value(data)


def test_codec_rejects_deep_nesting() -> None:
    data: object = 1
    for _ in range(200):
        data = {"L": [data]}
    with pytest.raises(CodecError):
        decode_value(data)


# ---------------------------------------------------------------- grading


def test_each_format_scores_right_and_wrong_programs(code_grader: CodeGrader) -> None:
    add = "def add(a, b):\n    return a + b\n"
    sub = "def add(a, b):\n    return a - b\n"
    test = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"
    results = score(
        code_grader,
        stdio("print(sum(map(int, input().split())))", [("1 2\n", "3\n"), ("2 2\n", "4\n")]),
        stdio("print(5)", [("1 2\n", "3\n"), ("2 3\n", "5\n")]),
        asserts(add, "add", ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]),
        asserts(sub, "add", ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]),
        check(add, "add", test),
        check(sub, "add", test),
        call(add, "add", [([1, 2], 3), ([[1], [2]], [1, 2])]),
        call(sub, "add", [([1, 2], 3), ([2, 0], 2)]),
    )
    assert [r.score for r in results] == [1.0, 0.5, 1.0, 0.5, 1.0, 0.0, 1.0, 0.5]
    assert [r.reward for r in results] == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert all(r.status == Status.OK for r in results)
    assert (
        results[1].detail == "passed 1/2; first failure: case 1: wrong answer (line 1: expected '3', got '5')"
    )
    assert "assert 1: wrong answer (assert add(1, 2) == 3)" in results[3].detail
    assert "check: wrong answer (assert candidate(1, 2) == 3)" in results[5].detail
    assert "case 1: wrong answer (expected 3, got -1)" in results[7].detail
    assert results[1].logs["code/passed"] == 1.0 and results[1].logs["code/total"] == 2.0


def test_runtime_error_detail_names_the_last_stderr_line(code_grader: CodeGrader) -> None:
    (result,) = score(code_grader, stdio("print(1 // 0)", [("", "1\n")]))
    assert result.detail.endswith(
        "runtime error (exit status 1: ZeroDivisionError: integer division or modulo by zero)"
    )
    assert result.logs["code/crashes"] == 1.0


def test_one_timeout_does_not_fail_the_other_tests(code_grader: CodeGrader) -> None:
    program = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    (result,) = score(code_grader, call(program, "f", [([1], 1), ([2], 2), ([3], 3)], time_limit_s=0.5))
    assert result.score == pytest.approx(2 / 3) and result.reward == 0.0
    assert result.logs["code/timeouts"] == 1.0 and "case 2: timeout" in result.detail


def test_candidate_exceptions_keep_their_builtin_type(code_grader: CodeGrader) -> None:
    program = "def f(x):\n    raise ValueError('bad ' + str(x))\n"
    test = "def check(candidate):\n    try:\n        candidate(1)\n    except ValueError as e:\n        assert str(e) == 'bad 1'\n"
    (result,) = score(code_grader, check(program, "f", test))
    assert result.reward == 1.0, result.detail


def test_helpers_come_from_the_label_and_the_program_may_call_them(code_grader: CodeGrader) -> None:
    helpers = "def enc(s):\n    return s[::-1]\n"
    completion = "def dec(s):\n    return enc(s)\n"  # calls the label's helper, defines none
    test = "import random\ndef check(candidate):\n    for n in range(20):\n        s = 'ab' * n\n        assert candidate(enc(s)) == s\n"
    (result,) = score(code_grader, check(completion, "dec", test, helpers=helpers))
    assert result.reward == 1.0, result.detail


def test_bad_labels_are_invalid_input(code_grader: CodeGrader) -> None:
    samples = [
        Sample(response="print(1)", label=label({"kind": "stdio", "cases": []})),
        Sample(response="print(1)", label=label({"kind": "nope"})),
        Sample(response="print(1)", label='{"grader": "code"}'),
        Sample(
            response="print(1)", label=label({"kind": "stdio", "cases": [{"output": "1"}]}, language="cobol")
        ),
    ]
    results = score(code_grader, *samples)
    assert [r.status for r in results] == [Status.INVALID_INPUT] * 4
    assert "cobol" in results[3].detail


def test_no_program_scores_zero(code_grader: CodeGrader) -> None:
    sample = Sample(response="<think>hmm", label=label({"kind": "stdio", "cases": [{"output": "1"}]}))
    (result,) = score(code_grader, sample)
    assert result.status == Status.OK and result.reward == 0.0 and result.logs["code/no_program"] == 1.0


def test_fraction_reward_mode() -> None:
    grader = CodeGrader(CodeConfig(reward="fraction", workers=1, warm_sandboxes=1))
    try:
        (result,) = score(grader, stdio("print(3)", [("", "3\n"), ("", "4\n"), ("", "3\n"), ("", "3\n")]))
    finally:
        asyncio.run(grader.aclose())
    assert result.reward == 0.75 and result.score == 0.75


def test_construction_is_cheap_and_close_removes_everything() -> None:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=2))
    assert grader._pool is None  # nothing started yet
    score(grader, stdio("print(1)", [("", "1\n")]))
    pool = grader._pool
    assert pool is not None and pool.cgroups is not None
    base = pool.cgroups.base_memory
    assert base.exists()
    asyncio.run(grader.aclose())
    assert not base.exists()
    assert all(s.process.poll() is not None for s in list(pool._live))


def test_refuses_to_start_without_bubblewrap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailableError, match="unsafe"):
        CodeGrader(CodeConfig())
    with caplog.at_level(logging.WARNING):
        grader = CodeGrader(CodeConfig(sandbox="unsafe", workers=1, warm_sandboxes=1))
    assert "UNSAFE" in caplog.text
    try:
        (result,) = score(grader, call("def f(x):\n    return x * 2\n", "f", [([4], 8)]))
    finally:
        asyncio.run(grader.aclose())
    assert result.reward == 1.0, result.detail
