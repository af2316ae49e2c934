"""`python_tool`: the policy thinks, runs Python in its own persistent interpreter, reads the
output, and answers; the answer is graded by the episode's label (math, or any recipe).

A turn whose action holds tool calls runs them in order (interpreter.py) and answers their output
in the feedback template; a turn without one is the final answer and ends the episode, as does the
last allowed turn. Limits: turns, tool calls and tool time per episode, each cell's time, memory
and output. What a cell causes (an exception, a timeout, a memory kill, a huge output) is feedback,
and a tool-error penalty where the recipe sets one; never an error of the service.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from arbiter.contract import EpisodeStartRequest, Sample, Status
from services.episodes.actions import render, tool_calls
from services.episodes.environments.base import (
    EnvironmentContext,
    StepOutcome,
    Tally,
    final_answer_bonus,
    turn_limit,
)
from services.episodes.interpreter import EXITED, MEMORY, OVERSIZE, TIMEOUT, CellResult, ReplSession


class PythonToolEnvironment:
    def __init__(self, context: EnvironmentContext, request: EpisodeStartRequest) -> None:
        self.context = context
        self.request = request
        self.options = context.settings.python_tool
        self.shaping = context.settings.shaping
        self.max_turns = turn_limit(request, self.options.max_turns)
        self.session = ReplSession(key=f"{request.episode_id}/{uuid.uuid4().hex}")  # unique in the pool
        self.tally = Tally()
        self.actions: list[str] = []

    async def reset(self) -> str:
        if self.options.prestart and self.context.interpreters is not None:
            self.context.interpreters().prestart(self.session)
        return self.request.prompt

    async def step(self, action: str, tool_code: Sequence[str] = (), final: bool = False) -> StepOutcome:
        self.actions.append(action)
        self.tally.add("episode/turns")
        if final:
            return await self._final(action)
        calls = list(tool_code) or tool_calls(action, self.options.tool_syntax, self.options.tag)
        if not calls or len(self.actions) >= self.max_turns:
            return await self._final(action)
        outputs: list[str] = []
        errors = 0
        for code in calls:
            output, failed = await self._call(code)
            outputs.append(output)
            errors += failed
        feedback = "".join(render(self.options.feedback_template, output) for output in outputs)
        penalty = self.shaping.tool_error_penalty * errors
        return StepOutcome(feedback=feedback, done=False, reward=-penalty if penalty else 0.0)

    async def _call(self, code: str) -> tuple[str, bool]:
        """One tool call's feedback text, and whether it counts as a tool error."""
        tally = self.tally
        if tally.values["episode/tool_calls"] >= self.options.max_tool_calls:
            tally.set("episode/over_tool_limit", 1.0)
            return f"[tool call limit reached: {self.options.max_tool_calls} per episode; answer now]", False
        if self.session.cpu_s >= self.options.episode_time_limit_s:
            tally.set("episode/over_tool_limit", 1.0)
            return (
                f"[tool time spent: {self.options.episode_time_limit_s:g} s per episode; answer now]",
                False,
            )
        tally.add("episode/tool_calls")
        if len(code) > self.options.max_cell_chars:
            tally.add("episode/tool_errors")
            return f"[code block of {len(code)} characters; the limit is {self.options.max_cell_chars}]", True
        assert self.context.interpreters is not None
        pool = self.context.interpreters()
        left = self.options.episode_time_limit_s - self.session.cpu_s
        limit = max(min(self.options.cell_time_limit_s, left), 0.05)
        result = await pool.run(self.session, code, limit, self.options.max_output_chars)
        tally.set("episode/tool_cpu_s", round(self.session.cpu_s, 6))
        tally.set("episode/replays", float(self.session.replays))
        return self._describe(result, limit), result.error

    def _describe(self, result: CellResult, limit: float) -> str:
        tally = self.tally
        if result.error:
            tally.add("episode/tool_errors")
        restarted = " The interpreter was restarted; earlier cells are run again before the next one."
        if result.killed == TIMEOUT:
            tally.add("episode/tool_timeouts")
            return f"TimeoutError: the cell ran past its {limit:g} s time limit.{restarted}"
        if result.killed == MEMORY:
            tally.add("episode/tool_memory_kills")
            mb = self.options.memory_limit_mb
            return f"MemoryError: the cell went over the {mb} MB memory limit.{restarted}"
        if result.killed == OVERSIZE:
            tally.add("episode/truncated_outputs")
            return f"[the cell's reply went over the output limit]{restarted}"
        if result.killed == EXITED:
            return f"[the interpreter exited]{restarted}"
        output = result.output.rstrip("\n")
        if result.truncated:
            tally.add("episode/truncated_outputs")
            output += f"\n[... output truncated at {self.options.max_output_chars} characters]"
        return output if output.strip() else "[no output]"

    async def _final(self, action: str) -> StepOutcome:
        """Grades the final answer (this action alone: nothing a program printed can forge it)."""
        tally = self.tally
        result = await self.context.grade(
            Sample(
                prompt=self.request.prompt,
                response=action,
                label=self.request.label,
                metadata=self.request.metadata,
            )
        )
        tally.set("episode/done", 1.0)
        tally.set("episode/correct", 1.0 if result.status is Status.OK and result.score > 0 else 0.0)
        tally.set("episode/grade_failed", 0.0 if result.status is Status.OK else 1.0)
        turns = len(self.actions)
        reward = (
            result.reward
            - self.shaping.turn_penalty * (turns - 1)
            + final_answer_bonus(action, self.shaping.format_bonus)
        )
        return StepOutcome(
            feedback="",
            done=True,
            reward=reward,
            score=result.score,
            status=result.status,
            detail=result.detail,
        )

    async def close(self) -> None:
        session = self.session
        if self.context.interpreters is not None and (
            session.sandbox or session.history or session.preparing
        ):
            await self.context.interpreters().close_session(self.session)
