"""Probe cases in the styles of public math-grader suites, through MathGrader's public API.

One test per category; a failure lists every case of the category that disagrees.
"""

from __future__ import annotations

import asyncio

import pytest

from arbiter.contract import Result, Sample, Status
from services.reward_rules.math import MathGrader
from tests.reward_rules.math_probes import PROBES

_results: list[Result] = []
_CATEGORIES = sorted({category for category, *_ in PROBES})


@pytest.fixture(scope="module")
def probe_results(math_grader: MathGrader) -> list[Result]:
    if not _results:
        samples = [Sample(prompt="", response=response, label=label) for _, label, response, _ in PROBES]

        async def run() -> list[Result]:
            out: list[Result] = []
            for start in range(0, len(samples), 64):
                out.extend(await math_grader.score(samples[start : start + 64]))
            return out

        _results.extend(asyncio.run(run()))
    return _results


def test_probes_have_negatives_beside_positives() -> None:
    assert len(PROBES) >= 300
    for category in _CATEGORIES:
        verdicts = {correct for cat, *_, correct in PROBES if cat == category}
        assert verdicts == {True, False}, category


@pytest.mark.parametrize("category", _CATEGORIES)
def test_probe_category(category: str, probe_results: list[Result]) -> None:
    wrong = []
    for (cat, label, response, correct), result in zip(PROBES, probe_results, strict=True):
        if cat != category:
            continue
        assert result.status == Status.OK, result.detail
        if result.score != (1.0 if correct else 0.0):
            wrong.append(f"{label!r} vs {response!r} (expected {correct}): {result.detail}")
    assert not wrong, "\n".join(wrong)
