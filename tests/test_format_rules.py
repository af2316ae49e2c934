"""Format / length / repetition rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.format_rules import (
    FormatGrader,
    FormatRulesSettings,
    overlong_penalty,
    repetition_penalty,
)


def grade(response: str, prompt: str = "", label: str = "", **config: object) -> tuple[float, float, str]:
    result = FormatGrader(FormatRulesSettings.model_validate(config)).grade(
        Sample(prompt=prompt, response=response, label=label)
    )
    assert result.status is Status.OK, result.detail
    return result.reward, result.score, result.detail


@pytest.mark.parametrize(
    ("response", "prompt", "ok"),
    [
        ("<think>reasoning</think> final", "", True),
        ("<think>reasoning</think>\n\nfinal<|im_end|>", "", True),
        ("reasoning</think> final", "...assistant\n<think>\n", True),  # template opened the block
        ("<think>reasoning</think> final", "...assistant\n<think>\n", False),  # opened twice
        ("<think>reasoning</think>", "", False),  # nothing after
        ("<think>a</think><think>b</think> c", "", False),
        ("preamble <think>a</think> c", "", False),
        ("<think>never closed", "", False),
        ("no tags at all", "", False),
    ],
)
def test_think_format(response: str, prompt: str, ok: bool) -> None:
    reward, score, detail = grade(response, prompt)
    assert (reward, score) == ((1.0, 1.0) if ok else (0.0, 0.0)), detail


def test_answer_tag_and_boxed_requirements() -> None:
    good = "<think>x</think><answer>\\boxed{3}</answer>"
    assert grade(good, require_answer_tag=True, require_boxed=True)[0] == 1.0
    reward, _, detail = grade("<think>x</think> 3", require_answer_tag=True, require_boxed=True)
    assert reward == 0.0 and "<answer>" in detail and "boxed" in detail
    assert (
        grade("<think>\\boxed{3}</think> 3", require_boxed=True)[0] == 0.0
    )  # a box in the thinking does not count


def test_overlong_penalty_matches_dapo() -> None:
    assert overlong_penalty(100, max_length=1000, buffer=200, factor=1.0) == 0.0
    assert overlong_penalty(800, max_length=1000, buffer=200, factor=1.0) == 0.0
    assert overlong_penalty(900, max_length=1000, buffer=200, factor=1.0) == pytest.approx(-0.5)
    assert overlong_penalty(1000, max_length=1000, buffer=200, factor=1.0) == pytest.approx(-1.0)
    assert overlong_penalty(5000, max_length=1000, buffer=200, factor=2.0) == pytest.approx(-2.0)
    assert overlong_penalty(1000, max_length=1000, buffer=0, factor=1.0) == -1.0
    assert overlong_penalty(10**6, max_length=0, buffer=0, factor=1.0) == 0.0


def test_length_and_repetition_shape_the_reward() -> None:
    text = "<think>" + " ".join(f"w{i}" for i in range(90)) + "</think> done"
    reward, score, detail = grade(text, max_length=100, overlong_buffer=20)
    tokens = 90 + 1 + 3 + 4  # w0..w89, "done", and "<think>" / "</think>" piece by piece
    assert score == 1.0 and reward == pytest.approx(1.0 - (tokens - 80) / 20)
    assert "overlong" in detail
    loop = "<think>" + "I should try again. " * 100 + "</think> done"
    reward, _, detail = grade(loop, repetition_penalty=1.0, repetition_threshold=0.5)
    assert reward < 0.2 and "repetitive" in detail
    assert repetition_penalty(0.4, 0.5, 1.0) == 0.0
    assert repetition_penalty(1.0, 0.5, 1.0) == pytest.approx(-1.0)


def test_label_overrides_per_sample() -> None:
    text = "<think>" + "word " * 50 + "</think> done"
    label = json.dumps({"grader": "format", "max_length": 40, "overlong_buffer": 10})
    reward, _, _ = grade(text, label=label)
    assert reward == pytest.approx(0.0)  # 1.0 format - 1.0 full overlong penalty
    grader = FormatGrader()
    bad = grader.grade(Sample(response=text, label=json.dumps({"grader": "format", "max_lenght": 5})))
    assert bad.status is Status.INVALID_INPUT and "max_lenght" in bad.detail
    typed = grader.grade(Sample(response=text, label=json.dumps({"grader": "format", "max_length": "long"})))
    assert typed.status is Status.INVALID_INPUT and "max_length" in typed.detail
    others = grader.grade(Sample(response=text, label=json.dumps({"grader": "math", "answer": "4"})))
    assert others.status is Status.OK and others.reward == 1.0  # another grader's label: defaults apply
    plain = grader.grade(Sample(response=text, label=json.dumps({"datasource": "gsm8k"})))
    assert plain.status is Status.OK


def test_config_hash_follows_config() -> None:
    assert FormatGrader().info.config_hash == FormatGrader().info.config_hash
    assert (
        FormatGrader().info.config_hash != FormatGrader(FormatRulesSettings(max_length=10)).info.config_hash
    )


@pytest.mark.parametrize("loop", ["?! " * 30_000, "." * 200_000, "🙂" * 50_000, "=-" * 40_000])
def test_symbol_loops_pay_the_overlong_and_repetition_penalties(loop: str) -> None:
    """Length and repetition are measured in tokens (words and each symbol), not `\\w+` words only."""
    settings: dict[str, Any] = {"max_length": 1000, "overlong_buffer": 200, "repetition_penalty": 1.0}
    symbols, _, detail = grade("<think>x</think> " + loop, **settings)
    words, _, _ = grade("<think>x</think> " + "again " * 30_000, **settings)
    assert symbols == pytest.approx(words, abs=1e-3) and symbols == pytest.approx(-1.0, abs=1e-3), detail
    assert "overlong" in detail and "repetitive" in detail
