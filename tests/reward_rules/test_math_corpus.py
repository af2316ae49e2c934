"""The labelled corpus, scored through MathGrader's public API in one batch."""

from __future__ import annotations

import asyncio

import pytest

from arbiter.contract import Result, Sample, Status
from services.reward_rules.math import MathGrader
from tests.reward_rules.math_corpus import CASES

_results: list[Result] = []


@pytest.fixture(scope="module")
def corpus_results(math_grader: MathGrader) -> list[Result]:
    if not _results:
        samples = [Sample(prompt="", response=response, label=label) for _, label, response, _ in CASES]

        async def run() -> list[Result]:
            out: list[Result] = []
            for start in range(0, len(samples), 64):  # the kit's batch size
                out.extend(await math_grader.score(samples[start : start + 64]))
            return out

        _results.extend(asyncio.run(run()))
    return _results


def test_corpus_is_large_and_covers_every_category() -> None:
    assert len(CASES) >= 300
    categories = {category for category, *_ in CASES}
    for needed in (
        "integer",
        "thousands",
        "fraction",
        "mixed",
        "percent",
        "scientific",
        "radical",
        "pi",
        "symbolic",
        "equation",
        "inequality",
        "interval",
        "set",
        "tuple",
        "matrix",
        "text",
        "units",
        "degrees",
        "complex",
        "trap",
        "boxed",
        "gsm8k",
        "answer_tag",
        "think",
        "choice",
    ):
        assert needed in categories
    assert sum(1 for *_, correct in CASES if not correct) >= 100


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_corpus_case(index: int, corpus_results: list[Result]) -> None:
    category, label, response, correct = CASES[index]
    result = corpus_results[index]
    assert result.status == Status.OK, result.detail
    assert result.score == (1.0 if correct else 0.0), (
        f"[{category}] {label!r} vs {response!r}: {result.detail}"
    )
    assert result.reward == result.score
