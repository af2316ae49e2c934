"""`MathGrader`: the kit's Grader for "is the final answer mathematically the reference".

The event loop only groups samples and awaits futures; extraction, parsing and
comparison all run in worker processes (pool.py) under a hard deadline, so a batch
always returns within `deadline_s` plus a small slack, whatever the responses hold.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.reward_rules.math.pool import PoolJob, WorkerPool
from services.reward_rules.math.verdict import GradeOptions, MathVerdict
from services.scoring.grader import GraderBase, config_hash

__all__ = ["LOG_KEYS", "MathConfig", "MathGrader"]

VERSION = "1.1.0"  # 1.1: multiple choice through the prompt, hedges, cut-off responses
# Past the deadline, how long score() waits for the dispatchers' own timeout verdicts.
_SLACK_S = 0.5

LOG_KEYS = (
    "math/extracted",
    "math/boxed",
    "math/parsed",
    "math/format_error",
    "math/timeout",
    "math/too_costly",
    "math/symbolic",
    "math/error",
    "math/undecided",
    "math/truncated",
)


class MathConfig(BaseModel):
    """Rewards, tolerance and resource limits of the math grader."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deadline_s: float = Field(default=5.0, gt=0, description="wall clock from score() to every verdict")
    sample_budget_s: float = Field(
        default=2.0, gt=0, description="compute cap per sample (at most deadline_s); a stuck one is killed"
    )
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    memory_mb: int = Field(default=2048, ge=0, description="address-space cap per worker; 0 = none")
    correct_reward: float = 1.0
    incorrect_reward: float = 0.0
    format_error_reward: float = Field(default=0.0, description="reward when no final answer is found")
    rel_tol: float = Field(default=1e-6, ge=0, lt=1, description="tolerance for written decimals")
    use_sympy: bool = True
    percent: Literal["number", "value"] = Field(
        default="number",
        description="'42%' against a plain number: 'number' = 42 (a unit sign), 'value' = 0.42; never both",
    )
    decimal_comma: Literal["auto", "never", "always"] = Field(
        default="auto",
        description=(
            "'1,5' as 1.5: 'auto' when the reference is one number and the comma is not followed by "
            "exactly three digits (1,234 stays one thousand two hundred thirty-four), 'never', 'always'"
        ),
    )
    chunk_size: int = Field(default=16, ge=1, description="samples per worker job")

    def semantic_hash(self) -> str:
        """Hash of what changes rewards (not of worker counts or memory caps)."""
        return config_hash(self.model_dump(mode="json", exclude={"workers", "memory_mb", "chunk_size"}))


class MathGrader(GraderBase):
    """Grades math answers; safe to share between event loops and threads."""

    _log_keys = LOG_KEYS

    def __init__(self, config: MathConfig | None = None) -> None:
        self.config = config or MathConfig()
        self._options = GradeOptions(
            rel_tol=self.config.rel_tol,
            use_sympy=self.config.use_sympy,
            percent=self.config.percent,
            decimal_comma=self.config.decimal_comma,
        )
        self._pool: WorkerPool | None = None
        self._info = GraderInfo(
            name="math",
            version=VERSION,
            config_hash=self.config.semantic_hash(),
            capabilities=["math", "latex", "boxed", "gsm8k", "multiple_choice", "deadline"],
        )

    @property
    def pool(self) -> WorkerPool:
        """The worker pool, started on first use (threads start processes in background)."""
        if self._pool is None:
            self._pool = WorkerPool(self.config.workers, self.config.memory_mb)
        return self._pool

    def submit(self, samples: Sequence[Sample], deadline: float) -> list[Future[MathVerdict]]:
        """Queue samples for grading (non-blocking); one future per sample, in order."""
        futures: list[Future[MathVerdict]] = [Future() for _ in samples]
        # GRPO's samples of one prompt share its label: one group, one prepared reference.
        groups: dict[tuple[str, str], list[int]] = {}
        for index, sample in enumerate(samples):
            groups.setdefault((sample.label, sample.prompt), []).append(index)
        pool = self.pool
        per_job = max(1, min(self.config.chunk_size, math.ceil(len(samples) / pool.size)))
        budget = min(self.config.sample_budget_s, self.config.deadline_s)
        jobs = []
        for (label, prompt), indices in groups.items():
            for start in range(0, len(indices), per_job):
                chunk = indices[start : start + per_job]
                items = [(i, samples[i].response, futures[i]) for i in chunk]
                jobs.append(PoolJob(label, self._options, items, budget, deadline, prompt))
        pool.submit(jobs)
        return futures

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        if not samples:
            return []
        deadline = time.monotonic() + self.config.deadline_s
        futures = self.submit(samples, deadline)
        wrapped = [asyncio.wrap_future(f) for f in futures]
        await asyncio.wait(wrapped, timeout=self.config.deadline_s + _SLACK_S)
        results = []
        for future, waiter in zip(futures, wrapped, strict=True):
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                results.append(self.to_result(waiter.result()))
            else:
                waiter.cancel()
                future.cancel()
                results.append(self.to_result(MathVerdict("timeout", "no verdict within the deadline")))
        return results

    def to_result(self, outcome: MathVerdict) -> Result:
        """Map a worker verdict to the contract's Result (rewards from the config).

        Non-OK verdicts carry 0.0 here: the kit gives every non-OK result the server's
        `fallback_reward`, one rule for every grader.
        """
        cfg = self.config
        verdict = outcome.verdict
        reward, score, status = {
            "correct": (cfg.correct_reward, 1.0, Status.OK),
            "incorrect": (cfg.incorrect_reward, 0.0, Status.OK),
            # The answer itself exhausted the per-sample budget, memory or recursion:
            # a wrong answer, never the fallback reward a policy could learn to aim for.
            "too_costly": (cfg.incorrect_reward, 0.0, Status.OK),
            "no_answer": (cfg.format_error_reward, 0.0, Status.OK),
            "bad_reference": (0.0, 0.0, Status.INVALID_INPUT),
            "timeout": (0.0, 0.0, Status.TIMEOUT),
        }.get(verdict, (0.0, 0.0, Status.GRADER_ERROR))
        logs = {
            "math/extracted": float(outcome.extracted),
            "math/boxed": float(outcome.boxed),
            "math/parsed": float(outcome.parsed),
            "math/format_error": float(verdict == "no_answer"),
            "math/timeout": float(verdict == "timeout"),
            "math/too_costly": float(verdict == "too_costly"),
            "math/symbolic": float(outcome.symbolic),
            "math/error": float(status == Status.GRADER_ERROR),
            # Set only on verdicts (never on timeouts or errors): a verifier may take these over.
            "math/undecided": float(status == Status.OK and (outcome.undecided or verdict == "no_answer")),
            "math/truncated": float(outcome.truncated),
        }
        return Result(
            reward=reward,
            score=score,
            status=status,
            detail=outcome.detail,
            logs=logs,
            prediction=outcome.prediction,
        )

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.close)
