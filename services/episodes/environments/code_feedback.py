"""`code_feedback`: the policy submits a program, reads its failures on the visible tests, repairs.

The label is JSON: `{"visible": TESTS, "hidden": TESTS, ...}` where TESTS is the code grader's
`tests` object (stdio, assert, check or call cases) and any other key (language, time_limit_s,
memory_limit_mb, fn_name...) is passed to the code grader as its label would be. Each turn the
action's program runs on the visible tests through the serving engine (the code grader: its
sandboxes, its extraction of the program from the response); their failures are the feedback. The
episode ends when the visible tests pass or at the turn limit: the final reward is the hidden
tests' result (the visible ones when the label has no hidden tests).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from arbiter.contract import EpisodeStartRequest, Result, Sample, Status
from services.episodes.environments.base import (
    EnvironmentContext,
    StepOutcome,
    Tally,
    final_answer_bonus,
    turn_limit,
)

DEFAULT_TURNS = 4
_MAX_FEEDBACK = 2048


def _labels(label: str) -> tuple[str, str] | str:
    """The code grader labels of the visible and hidden tests, or why the label is unusable."""
    try:
        value = json.loads(label)
    except (ValueError, RecursionError):
        return "the label is not JSON"
    if not isinstance(value, dict) or not isinstance(value.get("visible"), dict):
        return 'the label needs {"visible": TESTS, "hidden": TESTS}'
    rest: dict[str, Any] = {k: v for k, v in value.items() if k not in ("visible", "hidden", "grader")}
    hidden = value.get("hidden") if isinstance(value.get("hidden"), dict) else value["visible"]
    visible_label = json.dumps({**rest, "grader": "code", "tests": value["visible"]})
    hidden_label = json.dumps({**rest, "grader": "code", "tests": hidden})
    return visible_label, hidden_label


class CodeFeedbackEnvironment:
    def __init__(self, context: EnvironmentContext, request: EpisodeStartRequest) -> None:
        self.context = context
        self.request = request
        self.max_turns = turn_limit(request, DEFAULT_TURNS)
        self.tally = Tally()
        self.actions: list[str] = []
        self.labels = _labels(request.label)

    async def reset(self) -> str:
        return self.request.prompt

    async def _run(self, action: str, label: str) -> Result:
        sample = Sample(
            prompt=self.request.prompt, response=action, label=label, metadata=self.request.metadata
        )
        return await self.context.grade(sample)

    async def step(self, action: str, tool_code: Sequence[str] = (), final: bool = False) -> StepOutcome:
        """The program is the action (its last fenced block), or the last of `tool_code`. `final`
        skips the visible tests: the program is graded on the hidden ones now."""
        if tool_code:
            action = tool_code[-1]
        self.actions.append(action)
        self.tally.add("episode/turns")
        if isinstance(self.labels, str):
            self.tally.set("episode/done", 1.0)
            self.tally.set("episode/grade_failed", 1.0)
            return StepOutcome("", True, status=Status.INVALID_INPUT, detail=self.labels)
        visible, hidden = self.labels
        if final:
            return await self._graded(action, await self._run(action, hidden))
        self.tally.add("episode/tool_calls")
        checked = await self._run(action, visible)
        if checked.status is not Status.OK:
            self.tally.add("episode/tool_errors")
        passed = checked.status is Status.OK and checked.score >= 1.0
        if not passed and len(self.actions) < self.max_turns:
            detail = checked.detail or "the visible tests failed"
            if len(detail) > _MAX_FEEDBACK:
                self.tally.add("episode/truncated_outputs")
                detail = detail[:_MAX_FEEDBACK] + " [... truncated]"
            return StepOutcome(feedback=f"<feedback>\n{detail}\n</feedback>\n", done=False)
        return await self._graded(action, await self._run(action, hidden) if hidden != visible else checked)

    async def _graded(self, action: str, final: Result) -> StepOutcome:
        """The step that ends the episode, with the hidden tests' verdict on the program."""
        self.tally.set("episode/done", 1.0)
        self.tally.set("episode/correct", 1.0 if final.status is Status.OK and final.score >= 1.0 else 0.0)
        self.tally.set("episode/grade_failed", 0.0 if final.status is Status.OK else 1.0)
        shaping = self.context.settings.shaping
        reward = (
            final.reward
            - shaping.turn_penalty * (len(self.actions) - 1)
            + final_answer_bonus(action, shaping.format_bonus)
        )
        return StepOutcome(
            "", True, reward=reward, score=final.score, status=final.status, detail=final.detail
        )

    async def close(self) -> None:
        return None
