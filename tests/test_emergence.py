"""Emergence statistics: what a person watching a reasoning run reads in wandb."""

from __future__ import annotations

from arbiter.logkeys import slug
from arbiter.openrlhf import strip_eos
from services.common.settings import EmergenceSettings
from services.textstats.emergence import EmergenceStats, repeated_ngram_ratio

STATS = EmergenceStats(EmergenceSettings())


def test_keywords_are_case_insensitive_word_bounded_and_not_double_counted() -> None:
    text = "WAIT. Hmm, wait... Let me\nreconsider. Awaiting the await; actually-ish? Double-check it."
    logs = STATS.compute(text)
    assert logs["reflect/wait"] == 2.0  # not "Awaiting", not "await"
    assert logs["reflect/hmm"] == 1.0
    assert logs["reflect/let_me_reconsider"] == 1.0  # across a line break
    assert logs["reflect/actually"] == 0.0  # "actually-ish" is another word
    assert logs["reflect/double_check"] == 1.0
    assert logs["reflect/total"] == 5.0 and logs["reflect/any"] == 1.0


def test_custom_keyword_list_sets_the_keys() -> None:
    stats = EmergenceStats(EmergenceSettings(keywords=["aha", "let me think"]))
    logs = stats.compute("Aha! Let me think. aha")
    assert logs["reflect/aha"] == 2.0 and logs["reflect/let_me_think"] == 1.0
    assert "reflect/wait" not in logs
    assert set(logs) == set(stats.keys)


def test_every_response_gets_the_same_keys() -> None:
    assert set(STATS.compute("")) == set(STATS.compute("<think>x</think> \\boxed{1}")) == set(STATS.keys)


def test_stopped_format_and_length() -> None:
    logs = STATS.compute("<think>a b</think><answer>\\boxed{2}</answer><|im_end|>")
    assert logs["response/stopped"] == 1.0
    assert logs["format/think"] == logs["format/answer_tag"] == logs["format/boxed"] == 1.0
    cut = STATS.compute("<think>a b c")
    assert cut["response/stopped"] == 0.0 and cut["format/think"] == 0.0
    assert STATS.compute("done", finish_reason="stop")["response/stopped"] == 1.0
    assert STATS.compute("done</s>", finish_reason="length")["response/stopped"] == 0.0
    assert STATS.compute("one two three")["response/words"] == 3.0


def test_repetition_ratio_sees_collapse() -> None:
    fresh = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
    assert repeated_ngram_ratio(fresh, 4) == 0.0
    loop = ("I will try again " * 50).split()
    assert repeated_ngram_ratio(loop, 4) > 0.9
    assert repeated_ngram_ratio(["a"], 4) == 0.0


def test_helpers() -> None:
    assert slug("Let me re-check!") == "let_me_re_check"
    assert strip_eos("answer<|im_end|><|endoftext|>  ", ["<|im_end|>", "<|endoftext|>"]) == ("answer", True)
    assert strip_eos("answer", ["</s>"]) == ("answer", False)
