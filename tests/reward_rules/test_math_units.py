"""Unit tests of the pure pieces (extract, normalize, parse) and the grader's contract."""

from __future__ import annotations

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.math import MathConfig, MathGrader
from services.reward_rules.math.core import grade
from services.reward_rules.math.extract import extract_answer, extract_boxed, extract_reference, visible_text
from services.reward_rules.math.normalize import clean_answer
from services.reward_rules.math.parse import ParseError, parse_answer
from services.scoring.grader import Grader


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{1}, \\boxed{2}", "1, 2"),
        ("a \\boxed{1} b \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}"),
        ("\\boxed{a} then a long explanation of why \\boxed{b}", "b"),
        ("\\fbox{7}", "7"),
        ("no box", None),
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


def test_visible_text_drops_reasoning() -> None:
    assert visible_text("<think>secret</think>shown") == "shown"
    assert visible_text("<think>never closed") == ""
    assert visible_text("plain<|im_end|>") == "plain"


@pytest.mark.parametrize(
    ("response", "text", "source"),
    [
        ("The answer is $\\frac{1}{2}$.", "\\frac{1}{2}", "answer_phrase"),
        ("blah\n#### 1,234", "1,234", "gsm8k"),
        ("so the answer is #### 12", "12", "answer_phrase"),
        ("<answer>7</answer>", "7", "answer_tag"),
        ("we find 3 and then 4 so we are done 5", "5", "last_number"),
    ],
)
def test_extract_answer(response: str, text: str, source: str) -> None:
    extraction = extract_answer(response)
    assert extraction is not None
    assert (extraction.text, extraction.source) == (text, source)


def test_extract_reference_from_solution() -> None:
    assert extract_reference("Since $x=2$, we get $\\boxed{4}$.") == "4"
    assert extract_reference("He has 5.\n#### 5") == "5"
    assert extract_reference("\\frac{1}{2}") == "\\frac{1}{2}"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("$\\dfrac{1}{2}$", "\\frac{1}{2}"),
        ("1,000,000", "1000000"),
        ("30^\\circ", "30"),
        ("5\\text{ cm}^2", "5"),
        ("\\left( 1, 2 \\right]", "( 1, 2 ]"),
        ("0.\\overline{3}", "\\frac{3}{9}"),
        ("2 1/2", "2\\frac{1}{2}"),
    ],
)
def test_clean_answer(raw: str, clean: str) -> None:
    assert clean_answer(raw) == clean


@pytest.mark.parametrize("bad", ["\\frac{1}{", "1 +", "\\unknowncommand{2}", "(1, 2", "2 3", "\\ldots"])
def test_parser_rejects_instead_of_salvaging(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_answer(bad)


def test_unparseable_prediction_never_matches_by_a_salvaged_number() -> None:
    assert grade("1", "\\boxed{1-\\frac{1}{\\mathrm{ee}} \\unknown}").verdict == "incorrect"
    assert grade("1+\\frac{1}{e}", "\\boxed{1-\\frac{1}{e}}").verdict == "incorrect"


def test_grader_satisfies_the_protocol(math_grader: MathGrader) -> None:
    assert isinstance(math_grader, Grader)
    assert math_grader.info.name == "math"
    assert all(key.startswith("math/") for key in math_grader.log_keys)
    assert len(math_grader.info.config_hash) == 16


def test_config_hash_ignores_resources_but_not_rewards() -> None:
    base = MathGrader(MathConfig(workers=1)).info.config_hash
    assert MathGrader(MathConfig(workers=2, memory_mb=512)).info.config_hash == base
    assert MathGrader(MathConfig(workers=1, correct_reward=2.0)).info.config_hash != base


async def test_statuses_rewards_and_logs() -> None:
    grader = MathGrader(
        MathConfig(workers=1, correct_reward=2.0, incorrect_reward=-1.0, format_error_reward=-2.0)
    )
    try:
        results = await grader.score(
            [
                Sample(response="\\boxed{4}", label="4"),
                Sample(response="\\boxed{5}", label="4"),
                Sample(response="<think>4", label="4"),
                Sample(response="\\boxed{4}", label='{"grader": "code", "tests": []}'),
                Sample(response="\\boxed{4}", label=""),
            ]
        )
    finally:
        await grader.aclose()
    assert [(r.reward, r.score, r.status) for r in results] == [
        (2.0, 1.0, Status.OK),
        (-1.0, 0.0, Status.OK),
        (-2.0, 0.0, Status.OK),
        (0.0, 0.0, Status.INVALID_INPUT),  # non-OK: the server's fallback_reward replaces it
        (0.0, 0.0, Status.INVALID_INPUT),
    ]
    assert results[0].logs["math/extracted"] == 1.0
    assert results[0].logs["math/boxed"] == 1.0
    assert results[2].logs["math/format_error"] == 1.0
    assert "4" in results[0].detail and "boxed" in results[0].detail
    for result in results:
        assert set(result.logs) == set(grader.log_keys)


async def test_empty_batch(math_grader: MathGrader) -> None:
    assert await math_grader.score([]) == []


def test_a_long_expression_reference_is_not_mistaken_for_a_solution_text() -> None:
    long_polynomial = (
        "78310985281 x^{8} + 305999284576 x^{7} + 523129399656 x^{6} + 511258403632 x^{5} "
        "+ 312299826755 x^{4} + 122088843824 x^{3} + 29829969816 x^{2} + 4168128256 x + 214358881"
    )
    assert extract_reference(long_polynomial) == long_polynomial
    solution = (
        "We expand the binomial with the binomial theorem, then collect the terms of equal degree "
        "carefully, so the constant term is 214358881."
    )
    assert len(solution) > 120 and extract_reference(solution) == "214358881"


async def test_results_carry_the_answer_read_from_the_response() -> None:
    grader = MathGrader(MathConfig(workers=1))
    try:
        right, wrong, choice, none = await grader.score(
            [
                Sample(response="so \\boxed{\\frac{1}{2}}", label="0.5"),
                Sample(response="The answer is 7.", label="8"),
                Sample(response="The answer is (b).", label="B"),
                Sample(response="<think>still thinking", label="8"),
            ]
        )
    finally:
        await grader.aclose()
    assert right.prediction == "\\frac{1}{2}" and right.reward == 1.0
    assert wrong.prediction == "7" and wrong.reward == 0.0
    assert choice.prediction == "B"
    assert none.prediction == ""
