"""The generated real-output-style corpus (math_gen/real_style.py): size, balance, agreement.

Graded with the pure pipeline (`core.grade`, no worker pool), so the verdicts do not depend on
machine load; the public API's path is covered category by category in
test_math_real_outputs.py.
"""

from __future__ import annotations

from collections import Counter

from services.reward_rules.math.core import grade
from tests.reward_rules.math_gen.real_style import generate


def test_corpus_is_large_balanced_and_deterministic() -> None:
    cases = generate(0)
    assert len(cases) >= 3000
    assert [c.to_json() for c in cases[:50]] == [c.to_json() for c in generate(0)[:50]]
    by_category = Counter(c.category for c in cases)
    assert len(by_category) >= 15
    assert sum(not c.expected for c in cases) >= len(cases) // 3  # negatives beside positives
    assert any(len(c.response) >= 100_000 for c in cases)  # long chain-of-thought
    assert sum(bool(c.prompt.count("\n")) for c in cases if c.category.startswith("mc_")) > 0


def test_grader_agrees_and_pays_no_wrong_answer() -> None:
    cases = generate(1, scale=0.5)  # another seed than the bench's
    verdicts = [grade(c.reference, c.response, prompt=c.prompt).verdict == "correct" for c in cases]
    wrong_paid = [c.id for c, v in zip(cases, verdicts, strict=True) if v and not c.expected]
    right_missed = [c.id for c, v in zip(cases, verdicts, strict=True) if c.expected and not v]
    assert wrong_paid == []
    assert len(right_missed) <= 0.01 * sum(c.expected for c in cases), right_missed[:10]
