"""What a `custom` checker's return value means: True passes, a real number passes
when finite and at least the label's `checker_threshold` (1 by default), anything else fails.

The third red team's hack: `check = 1 - abs(out - exp)` returned -1e9 or nan for a wrong answer, and
any non-zero float passed. Both sides are tested: the rule itself (the harness's `checker_passed`,
called here as a plain function) and the whole path (labels through the public grader).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from arbiter.contract import Sample
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.harness import checker_passed
from services.reward_rules.code.tests_spec import StdioTests
from tests.reward_rules.code_fixtures import fenced, score

ECHO = "print(input())\n"


class _Liar(float):
    """A float subclass whose comparisons say yes: the rule reads the raw value."""

    def __ge__(self, other: object) -> bool:
        return True

    def __bool__(self) -> bool:
        return True


class _Truthy:
    def __bool__(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("value", "threshold", "passed"),
    [
        (True, 1.0, True),
        (False, 1.0, False),
        (None, 1.0, False),
        (1, 1.0, True),
        (0, 1.0, False),
        (2, 1.0, True),
        (1.0, 1.0, True),
        (0.999, 1.0, False),
        (0.5, 0.5, True),
        (0.49, 0.5, False),
        (-1e9, 1.0, False),
        (-1e9, -1e10, True),
        (float("nan"), 1.0, False),
        (float("nan"), -math.inf, False),
        (float("inf"), 1.0, False),
        (-0.0, 0.0, True),
        (10**400, 1.0, True),
        (-(10**400), 1.0, False),
        (_Liar(-5.0), 1.0, False),
        (_Liar(1.0), 1.0, True),
        (_Truthy(), 1.0, False),
        ("yes", 1.0, False),
        ([1], 1.0, False),
        (Fraction(3, 2), 1.0, False),  # not int or float: undefined, so it fails
        (1.0, "x", False),  # a threshold that is no number (never from a validated label)
        (1.0, float("nan"), False),
    ],
)
def test_the_rule(value: Any, threshold: Any, passed: bool) -> None:
    assert checker_passed(value, threshold) is passed


def test_numpy_scalars_are_their_builtin_values() -> None:
    numpy = pytest.importorskip("numpy")
    assert checker_passed(numpy.bool_(True), 1.0)
    assert not checker_passed(numpy.bool_(False), 1.0)
    assert checker_passed(numpy.int64(1), 1.0)
    assert not checker_passed(numpy.float64("nan"), 1.0)
    assert not checker_passed(numpy.float32(-1e9), 1.0)
    assert not checker_passed(numpy.array([True]), 1.0)  # an array is no scalar verdict


def test_the_threshold_is_a_finite_number_on_the_label() -> None:
    base = {"kind": "stdio", "cases": [{"input": "1\n", "output": "1\n"}], "checker": "custom"}
    base["checker_code"] = "def check(i, e, o):\n    return True\n"
    assert StdioTests.model_validate(base).checker_threshold == 1.0
    assert StdioTests.model_validate({**base, "checker_threshold": 0.5}).checker_threshold == 0.5
    with pytest.raises(ValueError):
        StdioTests.model_validate({**base, "checker_threshold": "nan"})


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=2, warm_sandboxes=2, memory_limit_mb=256))
    yield grader
    asyncio.run(grader.aclose())


def _custom(checker: str, cases: list[tuple[str, str]], **tests: Any) -> Sample:
    spec = {
        "kind": "stdio",
        "cases": [{"input": i, "output": o} for i, o in cases],
        "checker": "custom",
        "checker_code": checker,
        **tests,
    }
    return Sample(response=fenced(ECHO), label=json.dumps({"grader": "code", "tests": spec}))


# The red team's checker: a closeness score, 1 when exact, -1e9 (or nan) when far off.
CLOSENESS = (
    "def check(inp, exp, out):\n"
    "    try:\n"
    "        return 1 - abs(float(out) - float(exp))\n"
    "    except ValueError:\n"
    "        return float('nan')\n"
)


def test_a_score_checker_pays_only_a_right_answer(grader: CodeGrader) -> None:
    right, far, nan = score(
        grader,
        _custom(CLOSENESS, [("3\n", "3\n")]),
        _custom(CLOSENESS, [("1000000001\n", "1\n")]),
        _custom(CLOSENESS, [("three\n", "3\n")]),
    )
    assert right.reward == 1.0, right.detail
    assert far.reward == 0.0 and "checker" in far.detail, far.detail
    assert nan.reward == 0.0 and "checker" in nan.detail, nan.detail


def test_the_label_s_threshold_lets_a_near_answer_pass(grader: CodeGrader) -> None:
    near, off = score(
        grader,
        _custom(CLOSENESS, [("2.75\n", "3\n")], checker_threshold=0.5),
        _custom(CLOSENESS, [("2.25\n", "3\n")], checker_threshold=0.5),
    )
    assert near.reward == 1.0, near.detail
    assert off.reward == 0.0, off.detail


def test_truthy_objects_and_strings_fail(grader: CodeGrader) -> None:
    truthy = (
        "class Yes:\n    def __bool__(self):\n        return True\ndef check(i, e, o):\n    return Yes()\n"
    )
    results = score(
        grader,
        _custom(truthy, [("1\n", "1\n")]),
        _custom("def check(i, e, o):\n    return 'yes'\n", [("1\n", "1\n")]),
        _custom("def check(i, e, o):\n    return [True]\n", [("1\n", "1\n")]),
        _custom("def check(i, e, o):\n    return o.strip() == e.strip()\n", [("1\n", "1\n")]),
    )
    assert [r.reward for r in results] == [0.0, 0.0, 0.0, 1.0], [r.detail for r in results]
