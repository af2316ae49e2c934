"""The service's rewards equal a direct HF fp32 forward (abs diff < 1e-5), whatever the batching.

Both checkpoint formats, left and right padding, every batch size from 1 to N, mixed
lengths, in shuffled orders: batching must never change a score.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Literal

import pytest

from arbiter.contract import Sample, Status
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings
from testkit.tiny_checkpoints import TinyCheckpoints, sentence
from tests.reward_rm.reference import EOS, Reference, openrlhf_text

TOLERANCE = 1e-5
CHATML_PROMPT = "<s><|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def mixed_samples(count: int, seed: int) -> list[Sample]:
    """Plain (prompt, response) pairs and OpenRLHF-style templated ones, 5 to ~400 tokens."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for i in range(count):
        question, answer = sentence(rng, rng.randint(1, 15)), sentence(rng, rng.choice([1, 3, 10, 40, 120]))
        if i % 2:
            samples.append(Sample(prompt=question, response=answer))
        else:
            prompt = CHATML_PROMPT.format(q=question)
            finish = "stop" if i % 4 == 0 else "length"
            metadata = {"finish_reason": finish, "source": "openrlhf"}  # a query: templated already
            samples.append(Sample(prompt=prompt, response=answer, metadata=metadata))
    return samples


def expected_text(ref: Reference, sample: Sample, openrlhf: bool) -> str:
    if sample.metadata.get("source") == "openrlhf":  # an OpenRLHF query: as sent, its stripped EOS put back
        text = (
            sample.prompt + sample.response + (EOS if sample.metadata.get("finish_reason") == "stop" else "")
        )
    else:
        text = ref.chat_text(sample.prompt, sample.response)
    return openrlhf_text(text) if openrlhf else text


@pytest.fixture(scope="module")
def references(tiny: TinyCheckpoints) -> dict[str, Reference]:
    return {
        "openrlhf": Reference(tiny.openrlhf, tiny.mean, tiny.std, normalize=True),
        "hf": Reference(tiny.hf),
    }


def batches(count: int, seed: int) -> Iterator[list[int]]:
    """Sample indices: every batch size from 1 to `count`, each in a shuffled order."""
    rng = random.Random(seed)
    for size in range(1, count + 1):
        picked = list(range(count))
        rng.shuffle(picked)
        yield picked[:size]


@pytest.mark.parametrize("kind", ["openrlhf", "hf"])
@pytest.mark.parametrize("padding_side", ["left", "right"])
async def test_rewards_match_direct_hf_forward(
    tiny: TinyCheckpoints, references: dict[str, Reference], kind: str, padding_side: Literal["left", "right"]
) -> None:
    ref = references[kind]
    checkpoint = tiny.openrlhf if kind == "openrlhf" else tiny.hf
    samples = mixed_samples(12, seed=7)
    expected = [ref.reward(expected_text(ref, s, openrlhf=kind == "openrlhf")) for s in samples]
    assert len({round(v, 4) for v in expected}) == len(samples)  # distinct: a mix-up would show

    # A small token budget forces the backend to re-split batches into several forwards.
    settings = RMServiceSettings(checkpoint=str(checkpoint), padding_side=padding_side, token_budget=600)
    grader = RMGrader(settings)
    try:
        for batch in batches(len(samples), seed=len(padding_side)):
            results = await grader.score([samples[i] for i in batch])
            assert [r.status for r in results] == [Status.OK] * len(batch)
            for index, result in zip(batch, results, strict=True):
                assert abs(result.reward - expected[index]) < TOLERANCE, (len(batch), samples[index])
                assert result.score == result.reward
    finally:
        await grader.aclose()


async def test_normalization_and_activation_are_configurable(
    tiny: TinyCheckpoints, references: dict[str, Reference]
) -> None:
    ref = references["openrlhf"]
    sample = Sample(prompt="two plus two", response="is four")
    raw = (ref.reward(expected_text(ref, sample, openrlhf=True)) * tiny.std) + tiny.mean
    variants = [
        (RMServiceSettings(checkpoint=str(tiny.openrlhf)), (raw - tiny.mean) / tiny.std),  # the checkpoint's
        (RMServiceSettings(checkpoint=str(tiny.openrlhf), normalize=False), raw),
        (
            RMServiceSettings(checkpoint=str(tiny.openrlhf), normalize=False, activation="sigmoid"),
            1 / (1 + math.exp(-raw)),
        ),
    ]
    for settings, want in variants:
        grader = RMGrader(settings)
        try:
            [result] = await grader.score([sample])
        finally:
            await grader.aclose()
        assert abs(result.reward - want) < TOLERANCE
        assert abs(result.logs["rm/raw_reward"] - raw) < TOLERANCE
