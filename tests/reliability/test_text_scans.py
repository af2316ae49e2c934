"""Every scan of a response is linear, bounded in memory, and exact where it matters.

Lazy tag regexes (`<think>(.*?)</think>`) restart at every unmatched opening tag: 16,000
`<think>` froze a service for seconds. The checks here count work instead of timing it: a
response of repeated opening tags takes no more regex steps per character than plain text.
"""

from __future__ import annotations

import re

import pytest

from arbiter.contract import Sample
from services.common.settings import EmergenceSettings
from services.reward_rules.format_rules import FormatGrader, FormatRulesSettings
from services.textstats.emergence import EmergenceStats
from services.textstats.textscan import (
    REPETITION_WINDOW,
    chunks,
    has_pair,
    pair_contents,
    token_stats,
    tokens,
    words,
)

FLAGS = re.DOTALL | re.IGNORECASE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "<think>a</think>",
        "<THINK>a</Think> b <answer>x</answer> <answer> y </ANSWER>",
        "<answer>1</answer><answer>2",
        "<answer><answer>1</answer></answer>",
        "</answer><answer>",
        "<think>" * 50,
        "<answer>a</answer>" * 5 + "<answer>" * 7,
    ],
)
def test_scans_agree_with_the_lazy_regexes_they_replace(text: str) -> None:
    assert pair_contents(text, "<answer>", "</answer>") == re.findall(r"<answer>(.*?)</answer>", text, FLAGS)
    assert has_pair(text, "<think>", "</think>") == bool(re.search(r"<think>(.*?)</think>", text, FLAGS))


def test_unclosed_tags_cost_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old regexes read ~n^2/2 characters for n unclosed tags; the scans read each about once."""
    import services.textstats.textscan as textscan

    reads: list[int] = []
    real = textscan._tag

    class Spy:
        def __init__(self, pattern: re.Pattern[str]) -> None:
            self.pattern = pattern

        def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
            found = self.pattern.search(text, pos)
            reads.append((found.end() if found else len(text)) - pos)
            return found

    monkeypatch.setattr(textscan, "_tag", lambda tag: Spy(real(tag)))
    text = "<think>" * 16_000 + "<answer>" * 16_000
    has_pair(text, "<think>", "</think>")
    pair_contents(text, "<answer>", "</answer>")
    assert sum(reads) <= 3 * len(text)


def test_a_loop_of_opening_tags_is_scored_like_any_text() -> None:
    """112 KB of `<think>`: the scans finish and report what is there (no pair, no answer)."""
    text = "<think>" * 16_000
    logs = EmergenceStats(EmergenceSettings()).compute(text)
    assert logs["format/think"] == 0.0 and logs["format/answer_tag"] == 0.0
    result = FormatGrader(FormatRulesSettings(require_answer_tag=True)).grade(Sample(response=text))
    assert result.score == 0.0


def test_chunks_cut_at_whitespace_and_lose_nothing() -> None:
    text = ("word " * 100_000) + "x" * 600_000 + " tail"
    pieces = list(chunks(text, size=1000))
    assert "".join(pieces) == text
    assert sum(len(p.split()) for p in pieces) >= len(text.split())
    words_only = "alpha beta " * 50_000
    assert sum(len(p.split()) for p in chunks(words_only, size=777)) == len(words_only.split())


def test_token_stats_bounded_but_exact_for_ordinary_lengths() -> None:
    text = " ".join(f"w{i}" for i in range(1000))
    assert token_stats(text, str.split, 4).count == 1000
    assert token_stats(text, str.split, 4).repetition == 0.0
    huge = "." * (3 * REPETITION_WINDOW)  # no whitespace: one forced cut per chunk
    stats = token_stats(huge, re.compile(r"\w+|[^\w\s]").findall, 4)
    assert stats.count == 3 * REPETITION_WINDOW and stats.repetition > 0.99


def test_keywords_across_slice_cuts_are_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import services.textstats.emergence as emergence

    text = ("let me reconsider wait " * 40_000).strip()
    whole = EmergenceStats(EmergenceSettings()).compute(text)
    monkeypatch.setattr(emergence, "CHUNK_CHARS", 1009)  # cuts land inside keywords
    sliced = EmergenceStats(EmergenceSettings()).compute(text)
    assert sliced == whole
    assert whole["reflect/let_me_reconsider"] == 40_000 and whole["reflect/wait"] == 40_000


# -- loops without spaces: CJK, Thai, Hangul, digits, underscores (counted as a spaced loop) --------

NO_SPACE_LOOPS = {
    "han": "让我再检查一遍" * 20_000,
    "kana": "もう一度確認します" * 15_000,
    "hangul": "다시확인해보자" * 20_000,
    "thai": "ให้ฉันตรวจสอบอีกครั้ง" * 6_000,
    "digits": "0123456789" * 20_000,
    "underscores": "let_me_check_again_" * 8_000,
    "letters": "letmecheckagain" * 10_000,
}


@pytest.mark.parametrize("name", sorted(NO_SPACE_LOOPS))
def test_a_loop_without_spaces_is_penalised_like_a_spaced_loop(name: str) -> None:
    grader = FormatGrader(
        FormatRulesSettings(
            max_length=4000, overlong_buffer=1000, overlong_penalty_factor=1.0, repetition_penalty=1.0
        )
    )
    result = grader.grade(Sample(prompt="Q", response=f"<think>{NO_SPACE_LOOPS[name]}</think> 4"))
    assert result.logs["rules/length"] > 4000, result.logs
    assert result.logs["rules/repetition"] > 0.9, result.logs
    assert result.reward < -0.9, result.detail


@pytest.mark.parametrize("name", sorted(NO_SPACE_LOOPS))
def test_emergence_counts_a_loop_without_spaces_as_many_repeated_words(name: str) -> None:
    logs = EmergenceStats(EmergenceSettings()).compute(NO_SPACE_LOOPS[name])
    assert logs["response/words"] > 4000, logs
    assert logs["response/repetition"] > 0.9, logs


def test_ordinary_text_is_counted_as_before() -> None:
    text = "Let me check: 2+2 is 4, so the answer_key is 4. Reconsider!"
    assert words(text) == text.split()
    assert tokens(text.lower()) == re.findall(r"\w+|[^\w\s]", text.lower())
    assert words("答案是 4") == ["答", "案", "是", "4"]
    assert tokens("a" * 45) == ["a" * 20, "a" * 20, "a" * 5]
