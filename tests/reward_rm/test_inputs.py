"""What text and tokens the reward model reads: templates, EOS, BOS, truncation."""

from __future__ import annotations

from typing import Any

import pytest

from services.common.contract import Sample
from services.reward_rm.inputs import InputBuilder
from services.reward_rm.settings import RMServiceSettings
from tests.reward_rm.tiny_checkpoints import build_tokenizer

QUERY_PROMPT = "<s><|im_start|>user\nis two plus two four<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return build_tokenizer()


def builder(tokenizer: Any, append_eos: bool = True, **settings: Any) -> InputBuilder:
    return InputBuilder(tokenizer, RMServiceSettings(**settings), append_eos=append_eos)


def test_plain_pairs_get_the_chat_template_and_openrlhf_eos(tokenizer: Any) -> None:
    sample = Sample(prompt="is two plus two four", response="yes it is")
    chat = "<s><|im_start|>user\nis two plus two four<|im_end|>\n<|im_start|>assistant\nyes it is<|im_end|>\n"
    assert builder(tokenizer).text(sample) == (chat.rstrip("\n") + " </s>", True)
    assert builder(tokenizer, append_eos=False).text(sample) == (chat, True)


def test_templated_queries_are_used_as_sent_with_their_eos_put_back(tokenizer: Any) -> None:
    stopped = Sample(prompt=QUERY_PROMPT, response="yes", metadata={"finish_reason": "stop"})
    cut = Sample(prompt=QUERY_PROMPT, response="yes", metadata={"finish_reason": "length"})
    assert builder(tokenizer).text(stopped) == (QUERY_PROMPT + "yes</s>", False)
    assert builder(tokenizer).text(cut) == (QUERY_PROMPT + "yes </s>", False)  # as OpenRLHF training
    assert builder(tokenizer, append_eos=False).text(cut) == (QUERY_PROMPT + "yes", False)
    exact = Sample(prompt=QUERY_PROMPT, response="yes", metadata={"source": "openrlhf", "eos_text": "</s>\n"})
    assert builder(tokenizer, append_eos=False).text(exact) == (QUERY_PROMPT + "yes</s>\n", False)


def test_a_response_ending_with_eos_text_is_still_templated_once(tokenizer: Any) -> None:
    plain, stopped = (Sample(prompt="is two plus two four", response=r) for r in ("yes", "yes</s>"))
    assert builder(tokenizer).text(stopped) == builder(tokenizer).text(plain)


def test_template_mode_is_configurable(tokenizer: Any) -> None:
    plain = Sample(prompt="question ", response="answer")
    assert builder(tokenizer, chat_template="never").text(plain) == ("question answer </s>", False)
    templated = builder(tokenizer, chat_template="always").text(Sample(prompt=QUERY_PROMPT, response="x"))
    assert templated[1] and templated[0].count("<|im_start|>user") == 2


def test_no_double_bos(tokenizer: Any) -> None:
    # The prompt carries BOS and the template adds one: the model must see a single BOS.
    sample = Sample(prompt="<s>hello", response="there")
    [encoded] = builder(tokenizer, chat_template="always").encode([sample])
    bos = tokenizer.bos_token_id
    assert encoded.ids[0] == bos and encoded.ids[1] != bos
    [plain] = builder(tokenizer).encode([Sample(prompt="", response="<s><s>hi")])
    assert plain.ids[0] == bos and plain.ids[1] != bos


def test_truncation_keeps_the_end_by_default_and_is_flagged(tokenizer: Any) -> None:
    long = Sample(prompt="", response="two plus two is four " * 40)
    [full] = builder(tokenizer, max_length=100_000).encode([long])
    assert not full.truncated and full.input_tokens == len(full.ids) > 64

    [left] = builder(tokenizer, max_length=64).encode([long])
    assert left.truncated and left.input_tokens == len(full.ids)
    assert left.ids == full.ids[-64:] and left.ids[-1] == tokenizer.eos_token_id

    [right] = builder(tokenizer, max_length=64, truncation_side="right").encode([long])
    assert right.truncated and right.ids[:63] == full.ids[:63] and right.ids[-1] == tokenizer.eos_token_id

    [rejected] = builder(tokenizer, max_length=64, truncation_side="reject").encode([long])
    assert rejected.problem and "max_length 64" in rejected.problem


def test_empty_input_is_a_problem_not_a_score(tokenizer: Any) -> None:
    [empty] = builder(tokenizer, append_eos=False, chat_template="never").encode([Sample(response="")])
    assert empty.problem
