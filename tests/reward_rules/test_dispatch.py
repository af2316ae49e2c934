"""reward_rules alone (OpenRLHF pointed at its port): a plain reference answer is graded for correctness."""

from __future__ import annotations

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules import build
from services.reward_rules.settings import RulesServiceSettings


@pytest.fixture
async def rules():  # type: ignore[no-untyped-def]
    grader = build.build_grader(RulesServiceSettings())
    yield grader
    await grader.aclose()


@pytest.mark.parametrize(
    ("label", "response", "reward"),
    [
        ("42", "The answer is \\boxed{42}.", 1.0),
        ("42", "The answer is \\boxed{41}.", 0.0),
        ('{"answer": "5"}', "So we get $5$.", 1.0),
        ('{"answer": "5"}', "So we get $6$.", 0.0),
        ('{"reference": "x+1"}', "\\boxed{1+x}", 1.0),
    ],
)
async def test_reference_labels_go_to_math(rules, label: str, response: str, reward: float) -> None:  # type: ignore[no-untyped-def]
    sample = Sample(prompt="Q", response=response, label=label)
    assert rules.route(sample) == "math"
    [result] = await rules.score([sample])
    assert result.status == Status.OK
    assert result.reward == reward


@pytest.mark.parametrize("label", ["", "   ", '{"datasource": "chat"}'])
async def test_labels_without_a_reference_get_the_default(rules, label: str) -> None:  # type: ignore[no-untyped-def]
    assert rules.route(Sample(prompt="Q", response="<think>a</think> b", label=label)) == "format"


async def test_a_named_grader_wins(rules) -> None:  # type: ignore[no-untyped-def]
    assert (
        rules.route(Sample(prompt="Q", response="x", label='{"grader": "format", "answer": "3"}')) == "format"
    )


async def test_reference_grader_can_be_turned_off() -> None:
    grader = build.build_grader(RulesServiceSettings(reference_grader=""))
    try:
        assert grader.route(Sample(prompt="Q", response="x", label="42")) == "format"
    finally:
        await grader.aclose()
