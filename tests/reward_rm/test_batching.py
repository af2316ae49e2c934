"""Token-budget batching: every sample once, sorted by length, within the budget."""

from __future__ import annotations

import random

import pytest

from services.reward_rm.backends.batching import plan_batches


@pytest.mark.parametrize("seed", range(5))
def test_plan_covers_every_sample_once_within_budget(seed: int) -> None:
    rng = random.Random(seed)
    lengths = [rng.randint(1, 900) for _ in range(rng.randint(1, 300))]
    budget, max_batch, max_padding = 2048, 16, 0.2
    batches = plan_batches(lengths, budget, max_batch, max_padding)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= max_batch
        padded = len(batch) * max(lengths[i] for i in batch)
        assert padded <= budget or len(batch) == 1
        assert padded - sum(lengths[i] for i in batch) <= max_padding * padded
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(flat, reverse=True)  # similar lengths share a batch: little padding


def test_padding_cap_splits_mixed_lengths() -> None:
    lengths = [100, 98, 10, 9, 50]
    assert plan_batches(lengths, 10_000, 64) == [[0, 1, 4, 2, 3]]  # no cap: one forward, mostly padding
    assert plan_batches(lengths, 10_000, 64, max_padding=0.1) == [[0, 1], [4], [2, 3]]


def test_an_item_over_budget_still_runs_alone() -> None:
    assert plan_batches([5000, 10, 10], 1000, 8) == [[0], [1, 2]]
    assert plan_batches([], 1000, 8) == []
