"""Verdict parsing, templating, formulas and rubric files: the judge's pure parts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.judge_proxy.parsing import (
    ParseError,
    expected_value,
    looks_like_refusal,
    number_in,
    parse_label,
    parse_score,
)
from services.judge_proxy.rubrics import builtin_rubrics, load_rubrics, parse_rubrics
from services.judge_proxy.settings import UpstreamSettings
from services.judge_proxy.templating import TemplateError, render, validate
from services.scoring.formula import Formula, FormulaError


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Good answer. Rating: [[8]]", 8.0),
        ("Rating: 8/10", 8.0),
        ("Feedback: solid. [RESULT] 4", 4.0),
        ('```json\n{"explanation": "fine", "score": 6}\n```', 6.0),
        ('{"score": "7.5"}', 7.5),
        ("Score: 3. Later I say Rating: [[9]]", 9.0),  # the strongest form wins
        ("I'd give it [[2]] at first... no, [[5]]", 5.0),  # the last statement wins
        ("7", 7.0),
        ("The answer deserves 9/10.", 9.0),
    ],
)
def test_scores_in_every_common_format(text: str, value: float) -> None:
    assert parse_score(text, 1, 10).value == value


@pytest.mark.parametrize(
    "text",
    ["It is a good answer.", "Rating: [[11]]", "Rating: 4/5", "", "[[seven]]"],
)
def test_unreadable_or_out_of_range_scores_raise(text: str) -> None:
    with pytest.raises(ParseError):
        parse_score(text, 1, 10)


def test_labels_explicit_marks_and_word_fallback() -> None:
    labels = ["CORRECT", "INCORRECT"]
    assert parse_label("Thinking... [[INCORRECT]]", labels).text == "INCORRECT"
    assert parse_label('{"label": "CORRECT"}', labels).text == "CORRECT"
    assert parse_label("verdict: correct", labels).value == 0.0  # the index of CORRECT
    # A bare word is read only from the judge's own marked line, never from prose that may quote
    # the response ("... this answer is CORRECT").
    with pytest.raises(ParseError):
        parse_label("The response is INCORRECT because ...", labels)
    marked = "The answer says it is CORRECT.\nVERDICT-9f2c: INCORRECT, because ..."
    assert parse_label(marked, labels, nonce="9f2c").text == "INCORRECT"
    with pytest.raises(ParseError):  # both appear as words: ambiguous
        parse_label("VERDICT-9f2c: Is it CORRECT or INCORRECT? Hard to say.", labels, nonce="9f2c")
    with pytest.raises(ParseError):  # single letters are never guessed from prose
        parse_label("A good answer overall", ["A", "B", "C"])
    assert parse_label("So my verdict: [[B]]", ["A", "B", "C"]).value == 1.0


def test_refusals_are_recognised() -> None:
    assert looks_like_refusal("I'm sorry, but I can't help with that.", "stop", None)
    assert looks_like_refusal(None, "stop", "refused by policy")
    assert looks_like_refusal("whatever", "content_filter", None)
    assert not looks_like_refusal("Rating: [[3]]", "stop", None)


def _tokens(pieces: list[str], top: dict[str, float], at: int) -> list[dict[str, object]]:
    return [
        {
            "token": piece,
            "logprob": 0.0,
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top.items()] if i == at else [],
        }
        for i, piece in enumerate(pieces)
    ]


def test_expected_score_weights_the_score_token_alternatives() -> None:
    text = "Rating: [[8]]"
    found = parse_score(text, 1, 10)
    tokens = _tokens(
        ["Rating", ":", " ", "[", "[", "8", "]", "]"], {"8": math.log(0.6), "6": math.log(0.4)}, 5
    )
    assert expected_value(tokens, text, found, number_in(1, 10)) == pytest.approx(0.6 * 8 + 0.4 * 6)
    # too little mass on score tokens, a verdict split over tokens, misaligned tokens: no expectation
    thin = _tokens(["Rating", ":", " ", "[", "[", "8", "]", "]"], {"8": math.log(0.2), "x": math.log(0.8)}, 5)
    assert expected_value(thin, text, found, number_in(1, 10)) is None
    split = "Rating: [[10]]"
    assert (
        expected_value(
            _tokens(["Rating: [[", "1", "0", "]]"], {"1": 0.0}, 1),
            split,
            parse_score(split, 1, 10),
            number_in(1, 10),
        )
        is None
    )
    assert expected_value(_tokens(["Rating"], {}, 0), text, found, number_in(1, 10)) is None


def test_templates_render_once_and_name_what_is_missing() -> None:
    context = {
        "item": {"reference": "42", "meta": {"lang": "en"}},
        "sample": {"output_text": "{{item.reference}}"},
    }
    assert render("{{ item.reference }}/{{item.meta.lang}}", context) == "42/en"
    assert render("{{sample.output_text}}", context) == "{{item.reference}}"  # no second pass
    with pytest.raises(TemplateError, match=r"item\.baseline"):
        render("{{item.baseline}}", context)
    with pytest.raises(TemplateError):
        validate("{{ os.environ }}")
    with pytest.raises(TemplateError):
        validate("{{item.x + 1}}")


def test_formulas_allow_arithmetic_only() -> None:
    formula = Formula("0.5 * a + clip(b, 0, 1) - min(a, b) / 2", {"a", "b"})
    assert formula({"a": 1.0, "b": 3.0}) == pytest.approx(0.5 + 1 - 0.5)
    for bad in ("__import__('os')", "a.b", "a ** 99", "[a]", "lambda: 1", "a if b else 0"):
        with pytest.raises(FormulaError):
            Formula(bad, {"a", "b"})
    with pytest.raises(FormulaError, match="uses"):
        Formula("a + c", {"a", "b"})
    with pytest.raises(FormulaError, match="division by zero"):
        Formula("a / b")({"a": 1.0, "b": 0.0})


def test_builtin_rubrics_load_and_files_override_them(tmp_path: Path) -> None:
    names = {rubric.name for rubric in builtin_rubrics()}
    assert names == {"helpfulness", "correctness", "pairwise", "verifier", "verifier_letters"}
    extra = tmp_path / "mine.yaml"
    extra.write_text(
        "rubrics:\n"
        "  - {name: exact, type: string_check, operation: eq}\n"
        "  - name: helpfulness\n    type: score_model\n    range: [1, 5]\n"
        "    messages: [{role: user, content: 'Rate {{sample.output_text}}'}]\n"
    )
    registry = load_rubrics([extra])
    assert {"exact", "pairwise"} <= set(registry)
    assert registry["helpfulness"].range == (1.0, 5.0)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (
            {"name": "x", "type": "score_model", "messages": [{"role": "user", "content": "{{env.HOME}}"}]},
            "namespace",
        ),
        (
            {
                "name": "x",
                "type": "score_model",
                "range": [5, 1],
                "messages": [{"role": "user", "content": "hi"}],
            },
            "range",
        ),
        (
            {
                "name": "x",
                "type": "label_model",
                "labels": ["a", "b"],
                "passing_labels": ["c"],
                "messages": [{"role": "user", "content": "hi"}],
            },
            "not in labels",
        ),
        (
            {"name": "x", "type": "multi", "formula": "a + b", "graders": {"a": {"type": "string_check"}}},
            "uses",
        ),
        ({"type": "string_check"}, "no name"),
    ],
)
def test_bad_rubrics_are_rejected_at_load(data: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_rubrics(data, "test.yaml")


def test_api_keys_are_refused_in_config() -> None:
    with pytest.raises(ValidationError, match="api_key_env"):
        UpstreamSettings.model_validate({"base_url": "http://x/v1", "model": "m", "api_key": "sk-secret"})
    with pytest.raises(ValidationError, match="api_key_env"):
        UpstreamSettings.model_validate(
            {"base_url": "http://x/v1", "model": "m", "headers": {"Authorization": "x"}}
        )
