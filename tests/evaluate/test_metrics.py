"""pass@k against the closed form and brute force; maj@k and grouping on constructed runs."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from services.evaluate.columns import ColumnMap
from services.evaluate.metrics import Aggregate, default_ks, majority_correct, pass_at_k


@pytest.mark.parametrize(("n", "c"), [(n, c) for n in (1, 2, 5, 8, 16) for c in range(n + 1)])
def test_pass_at_k_is_the_closed_form(n: int, c: int) -> None:
    for k in range(1, n + 1):
        closed = 1.0 - math.comb(n - c, k) / math.comb(n, k)
        assert pass_at_k(n, c, k) == pytest.approx(closed, abs=1e-12)


def test_pass_at_k_is_the_chance_that_k_drawn_samples_hold_a_correct_one() -> None:
    samples = [True, False, False, True, False, False]
    for k in range(1, len(samples) + 1):
        draws = list(itertools.combinations(samples, k))
        expected = sum(any(d) for d in draws) / len(draws)
        assert pass_at_k(len(samples), sum(samples), k) == pytest.approx(expected)


def test_pass_at_k_survives_sizes_where_binomials_overflow_floats() -> None:
    value = pass_at_k(2000, 1, 1000)
    assert value == pytest.approx(0.5)
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 5)


def test_majority_vote_and_default_ks() -> None:
    assert majority_correct([("a", False), ("b", True), ("b", True)])
    assert not majority_correct([("a", False), ("a", False), ("b", True)])
    assert majority_correct([("b", True), ("a", False)])  # a tie goes to the answer seen first
    assert default_ks(1) == [1] and default_ks(8) == [1, 2, 4, 8] and default_ks(5) == [1, 2, 4, 5]


def _record(prompt: str, ok: bool, source: str, detail: str = "", status: str = "OK") -> dict[str, Any]:
    score = 1.0 if ok else 0.0
    return {
        "prompt": prompt,
        "datasource": source,
        "reward": score,
        "score": score,
        "status": status,
        "detail": detail,
        "logs": {"reflect/wait": 1.0 if ok else 0.0, "response/chars": 10.0},
    }


def test_aggregate_groups_prompts_per_datasource_and_counts_failures() -> None:
    agg = Aggregate(ColumnMap())
    # p1 (math): 1 of 4 correct, wrong answers agree on "7": maj@4 wrong, pass@4 right.
    for ok, detail in [(True, ""), (False, "'7'"), (False, "'7'"), (False, "'8'")]:
        agg.add(_record("p1", ok, "math", detail))
    # p2 (math): 3 of 4 correct, one timed out.
    for ok in (True, True, True):
        agg.add(_record("p2", ok, "math"))
    agg.add(_record("p2", False, "math", "no verdict", status="TIMEOUT"))
    # p1 in another datasource is another prompt.
    agg.add(_record("p1", True, "aime"))
    agg.add(_record("p1", True, "aime"))
    summary = agg.summary([1, 2, 4])
    math_ = summary["by_datasource"]["math"]
    assert math_["prompts"] == 2 and math_["rows"] == 8
    assert math_["pass@1"] == pytest.approx((0.25 + 0.75) / 2)
    assert math_["pass@k"]["2"]["value"] == pytest.approx((pass_at_k(4, 1, 2) + pass_at_k(4, 3, 2)) / 2)
    assert math_["pass@k"]["4"]["value"] == pytest.approx(1.0)
    assert math_["maj@k"]["4"]["value"] == pytest.approx(0.5)
    assert math_["timeouts"] == 1 and math_["errors"] == 1 and math_["statuses"] == {"OK": 7, "TIMEOUT": 1}
    overall = summary["overall"]
    assert overall["prompts"] == 3 and overall["rows"] == 10
    assert overall["pass@k"]["4"]["prompts"] == 2  # the aime prompt has only 2 samples
    assert overall["mean_logs"]["reflect/wait"] == pytest.approx(6 / 10)


def test_prompt_id_and_answer_columns_override_the_defaults() -> None:
    agg = Aggregate(ColumnMap(prompt_id="qid", answer="pred"))
    for prompt, qid, ok, pred in [("x", "q1", True, "3"), ("y", "q1", False, "4"), ("z", "q1", False, "4")]:
        agg.add({**_record(prompt, ok, "s"), "qid": qid, "pred": pred})
    summary = agg.summary([3])
    assert summary["overall"]["prompts"] == 1
    assert summary["overall"]["maj@k"]["3"]["value"] == 0.0
