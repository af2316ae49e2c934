"""Shared fixtures for the reward_rules tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.reward_rules.math import MathConfig, MathGrader


@pytest.fixture(scope="session")
def math_grader() -> Iterator[MathGrader]:
    """One grader for the session: its worker pool is loop-agnostic, so tests share it."""
    grader = MathGrader(MathConfig(deadline_s=5.0, workers=2))
    yield grader
    if grader._pool is not None:
        grader._pool.close()
