"""Issue 25: answers as models write them, through the public API (`MathGrader.score`).

Each category holds positives beside negatives. The generated real-output-style corpus
(math_gen/real_style.py) covers the same categories at scale; these are the cases a
reader checks by eye.
"""

from __future__ import annotations

import pytest

from services.common.contract import Sample, Status
from services.reward_rules.math import MathGrader


async def _score(grader: MathGrader, label: str, response: str, prompt: str = "") -> float:
    [result] = await grader.score([Sample(prompt=prompt, response=response, label=label)])
    assert result.status == Status.OK, result.detail
    return result.score


# -- 7, 8: equalities that are not, and one that is -----------------------------------------
@pytest.mark.parametrize(
    ("label", "response", "expected"),
    [
        ("12:00", "The time is $\\boxed{1:00}$.", 0.0),  # a zero part: every cross product is 0
        ("1:00", "The time is $\\boxed{1:00}$.", 1.0),
        ("5:12", "$\\boxed{10:24}$", 1.0),
        ("0:5", "$\\boxed{0:7}$", 0.0),
        ("7 = 11a+c", "So $\\boxed{11a+c}$.", 0.0),  # only the unnamed side of the equation
        ("7 = 11a+c", "So $\\boxed{11a+c=7}$.", 1.0),
        ("7 = x", "So $\\boxed{7}$.", 1.0),
        ("\\sqrt{1/n}", "$\\boxed{\\frac{1}{\\sqrt{n}}}$", 1.0),  # real where both are real
        ("\\frac{1}{\\sqrt{n}}", "$\\boxed{\\sqrt{\\frac{1}{n}}}$", 1.0),
        ("\\sqrt{1/n}", "$\\boxed{\\frac{1}{n}}$", 0.0),
        ("|x|", "$\\boxed{x}$", 0.0),  # both real everywhere: negative points separate them
        ("\\sqrt{x^2}", "$\\boxed{x}$", 0.0),
        ("|x-5|", "$\\boxed{5-x}$", 0.0),
    ],
)
async def test_equalities(math_grader: MathGrader, label: str, response: str, expected: float) -> None:
    assert await _score(math_grader, label, response) == expected
