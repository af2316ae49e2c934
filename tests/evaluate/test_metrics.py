"""pass@k against the closed form and brute force; maj@k and grouping on constructed runs."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from typing import Any

import pytest

from services.evaluate.columns import ColumnMap
from services.evaluate.passk import Aggregate, default_ks, expected_majority, majority_correct, pass_at_k


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


def _brute_majority(votes: list[str], k: int) -> float:
    """maj@k by enumeration: every k-subset, ties split evenly among the top answers."""
    wins = 0.0
    subsets = list(itertools.combinations(votes, k))
    for draw in subsets:
        counts = Counter(draw)
        best = max(counts.values())
        top = [answer for answer, c in counts.items() if c == best]
        wins += ("ok" in top) / len(top)
    return wins / len(subsets)


@pytest.mark.parametrize("seed", range(60))
def test_maj_at_k_is_the_expected_vote_over_every_k_subset(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 13)
    pool = ["ok"] * rng.randint(1, 4) + ["a", "b", "c", f"x{rng.randint(0, 3)}"][: rng.randint(1, 4)]
    votes = [rng.choice(pool) for _ in range(n)]
    counts = Counter(votes)
    correct = counts.pop("ok", 0)
    for k in range(1, n + 1):
        got = expected_majority(correct, tuple(sorted(counts.values())), k)
        assert got == pytest.approx(_brute_majority(votes, k), abs=1e-12), (votes, k)


def test_maj_at_k_does_not_depend_on_row_order() -> None:
    # Before: maj@2 voted over the first 2 rows in file order (1.0 one way round, 0.0 the other).
    rows = [("p", True, "s", ""), ("p", True, "s", ""), ("p", False, "s", "'7'"), ("p", False, "s", "'7'")]
    values = []
    for order in (rows, rows[::-1]):
        agg = Aggregate(ColumnMap())
        for prompt, ok, source, detail in order:
            agg.add(_record(prompt, ok, source, detail))
        values.append(agg.summary([2])["overall"]["maj@k"]["2"]["value"])
    # 6 pairs: 1 both right (win), 1 both '7' (lose), 4 split 1-1 (half each).
    assert values == [pytest.approx(0.5), pytest.approx(0.5)]
    assert expected_majority(200, (100, 99), 100) == pytest.approx(expected_majority(200, (99, 100), 100))


def test_broken_rows_are_counted_apart_not_scored_as_a_problem() -> None:
    agg = Aggregate(ColumnMap(prompt_id="qid"))
    for q in range(4):
        for s in range(4):
            agg.add({**_record(f"p{q}", s < q, "math"), "qid": f"q{q}"})
    clean = agg.summary([1, 4])["overall"]
    broken = {"_line": 99, "_raw": "{not json", "reward": 0.0, "score": 0.0, "status": "INVALID_INPUT"}
    agg.add(broken)
    agg.add({**broken, "datasource": "math"})
    summary = agg.summary([1, 4])
    overall = summary["overall"]
    assert overall["pass@1"] == clean["pass@1"] and overall["prompts"] == 4
    assert overall["pass@k"]["1"]["prompts"] == overall["pass@k"]["4"]["prompts"] == 4
    assert overall["mean_reward"] == clean["mean_reward"] and overall["accuracy"] == clean["accuracy"]
    assert (
        overall["rows"] == 18 and overall["unusable_rows"] == 2 and overall["statuses"]["INVALID_INPUT"] == 2
    )
    assert set(summary["by_datasource"]) == {"math"}  # no fake "default" datasource
    assert summary["by_datasource"]["math"]["unusable_rows"] == 1
    assert any("2 unusable row" in w for w in summary["warnings"])


def test_rows_without_prompt_or_id_are_each_their_own_problem_with_a_warning() -> None:
    agg = Aggregate(ColumnMap())
    for i in range(6):
        agg.add(_record("", i % 2 == 0, "math"))
    summary = agg.summary()
    assert summary["ks"] == [1] and summary["overall"]["prompts"] == 6
    assert summary["overall"]["pass@1"] == pytest.approx(0.5)
    assert any("6 row(s) have no 'prompt'" in w for w in summary["warnings"])
    assert agg.summary([2])["overall"]["pass@k"]["2"] == {"value": None, "prompts": 0}
