"""A sample the reward model cannot score must never gain from it.

An RM's rewards have no fixed scale (-2 to -4 is common): the kit's constant fallback of 0.0
would sit above them. The RM answers the lowest reward of its recent scored samples instead.
"""

from __future__ import annotations

import random

from arbiter.contract import Sample, Status
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings
from services.scoring.engine import ScoringEngine
from testkit.tiny_checkpoints import TinyCheckpoints, sentence


def samples(count: int) -> list[Sample]:
    rng = random.Random(5)
    return [Sample(prompt=sentence(rng, 6), response=sentence(rng, rng.randint(2, 30))) for _ in range(count)]


async def test_a_failure_gets_the_floor_of_recent_rewards(tiny: TinyCheckpoints) -> None:
    # mean far above the rewards: every normalized reward is well below 0.
    settings = RMServiceSettings(checkpoint=str(tiny.openrlhf), max_length=64, truncation_side="reject")
    grader = RMGrader(settings)
    engine = ScoringEngine(grader, settings)
    too_long = Sample(prompt="count", response="two plus two is four " * 60)
    await engine.start()
    try:
        [before] = await engine.score([too_long])  # nothing scored yet: the configured fallback
        assert before.status is Status.INVALID_INPUT and before.reward == settings.fallback_reward
        scored = await engine.score(samples(12))
        rewards = [r.reward for r in scored]
        assert all(r.status is Status.OK for r in scored)
        [failed] = await engine.score([too_long])
        assert failed.status is Status.INVALID_INPUT and failed.logs["status/invalid_input"] == 1.0
        assert failed.reward == min(rewards)
        assert failed.score == 0.0
        [own] = await grader.score([too_long])  # the grader's own result (the gateway reads it)
        assert own.status is Status.INVALID_INPUT and own.reward == min(rewards)
    finally:
        await engine.stop()


async def test_the_floor_follows_the_window_and_fixed_keeps_the_constant(tiny: TinyCheckpoints) -> None:
    settings = RMServiceSettings(checkpoint=str(tiny.openrlhf), floor_window=3)
    grader = RMGrader(settings)
    try:
        rewards = [r.reward for r in await grader.score(samples(8))]
        assert grader.failure_reward(0.0) == min(rewards[-3:])
        [extra] = await grader.score([Sample(prompt="q", response="a")])
        assert grader.failure_reward(0.0) == min([*rewards[-2:], extra.reward])
    finally:
        await grader.aclose()
    fixed = RMGrader(RMServiceSettings(checkpoint=str(tiny.openrlhf), failure_reward="fixed"))
    try:
        await fixed.score(samples(4))
        assert fixed.failure_reward(0.5) == 0.5
    finally:
        await fixed.aclose()
