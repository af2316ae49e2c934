"""The generated differential corpus (tests/reward_rules/math_gen): in sync with its
generator, large and varied, and graded through MathGrader's public API in agreement
with the labels it was built with.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

from arbiter.contract import Sample, Status
from services.reward_rules.math import MathGrader
from tests.reward_rules.math_gen.generate import CORPUS, generate


def test_committed_corpus_is_what_the_generator_writes() -> None:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    assert lines == [case.to_json() for case in generate(0)]


def test_corpus_is_large_and_varied() -> None:
    cases = generate(0)
    assert len(cases) >= 5000
    categories = Counter(case.category for case in cases)
    assert len(categories) >= 12
    assert {case.language for case in cases} >= {"en", "fr", "es", "de", "zh", "ja", "ru"}
    for category in categories:
        verdicts = {case.expected for case in cases if case.category == category}
        assert verdicts == {True, False}, category


def test_grader_agrees_with_the_labels(math_grader: MathGrader) -> None:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    samples = [Sample(response=row["response"], label=row["reference"]) for row in rows]

    async def run() -> list[tuple[bool, Status]]:
        out: list[tuple[bool, Status]] = []
        for start in range(0, len(samples), 256):
            results = await math_grader.score(samples[start : start + 256])
            out.extend((r.score == 1.0, r.status) for r in results)
        return out

    verdicts = asyncio.run(run())
    assert all(status == Status.OK for _, status in verdicts)
    wrong_paid = sum(got and not row["expected"] for (got, _), row in zip(verdicts, rows, strict=True))
    right_missed = sum(row["expected"] and not got for (got, _), row in zip(verdicts, rows, strict=True))
    positives = sum(row["expected"] for row in rows)
    assert wrong_paid <= (len(rows) - positives) / 200
    assert right_missed <= positives / 100
