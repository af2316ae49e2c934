"""`math/undecided`: the rule grader says when it cannot decide, so a verifier may.

Set on verdicts only: nothing extracted, a free-form text answer, multiple choice with
no letter found. Never on a decided numeric verdict, a timeout or an error.
"""

from __future__ import annotations

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.math import MathGrader
from services.reward_rules.math.grader import LOG_KEYS


@pytest.mark.parametrize(
    ("label", "response", "undecided"),
    [
        ("42", "The answer is $\\boxed{42}$.", 0.0),  # decided, right
        ("42", "The answer is $\\boxed{41}$.", 0.0),  # decided, wrong
        ("42", "I do not know how to do this problem.", 1.0),  # nothing extracted
        ("42", "", 1.0),
        ("\\text{the set of all primes}", "The answer is: every odd number greater than two.", 1.0),
        ("B", "The answer is $\\boxed{B}$.", 0.0),
        ("B", "The answer is $\\boxed{A}$.", 0.0),
        ("B", "None of the options is correct, I believe.", 1.0),  # no letter found
        ("yes", "The answer is no.", 0.0),
    ],
)
async def test_undecided_key(math_grader: MathGrader, label: str, response: str, undecided: float) -> None:
    [result] = await math_grader.score([Sample(response=response, label=label)])
    assert result.status == Status.OK
    assert result.logs["math/undecided"] == undecided, result.detail
    assert list(result.logs) == list(LOG_KEYS)  # same keys on every call


async def test_undecided_not_on_bad_reference(math_grader: MathGrader) -> None:
    [result] = await math_grader.score([Sample(response="\\boxed{1}", label="")])
    assert result.status == Status.INVALID_INPUT
    assert result.logs["math/undecided"] == 0.0
