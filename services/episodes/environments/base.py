"""What an environment is to the episode manager, and the logs every episode reports.

An environment answers one episode's actions turn by turn: tool output or test failures as
feedback, a per-step reward (shaping), and, on the step that ends it, the final reward from
grading the final answer through the serving engine (the service's recipes and graders). It never
raises for what the action does: that is feedback or a verdict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from arbiter.contract import (
    EPISODE_COUNTER_KEYS,
    EPISODE_FAILED_KEY,
    EPISODE_LOST_KEY,
    EpisodeStartRequest,
    Result,
    Sample,
    Status,
)
from services.episodes.settings import EpisodeSettings
from services.textstats.emergence import EmergenceStats

if TYPE_CHECKING:
    from services.episodes.interpreter import InterpreterPool

Grade = Callable[[Sample], Awaitable[Result]]

COUNTERS = EPISODE_COUNTER_KEYS
FLAGS = (EPISODE_LOST_KEY, EPISODE_FAILED_KEY)  # infrastructure: the episode is gone / cannot go on


@dataclass
class EnvironmentContext:
    """What environments are built with: the settings, the final grader, the shared interpreters."""

    settings: EpisodeSettings
    grade: Grade
    emergence: EmergenceStats
    interpreters: Callable[[], InterpreterPool] | None = None  # built on first use


@dataclass
class StepOutcome:
    feedback: str
    done: bool
    reward: float = 0.0
    score: float = 0.0
    status: Status = Status.OK
    detail: str = ""


@dataclass
class Tally:
    """An episode's counters (COUNTERS), updated as it goes."""

    values: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0.0))

    def add(self, key: str, amount: float = 1.0) -> None:
        self.values[key] += amount

    def set(self, key: str, value: float) -> None:
        self.values[key] = value


class Environment(Protocol):
    tally: Tally
    actions: list[str]
    max_turns: int  # the last allowed turn's action is graded

    async def reset(self) -> str:
        """The first observation (the prompt as the policy sees it)."""
        ...

    async def step(self, action: str, tool_code: Sequence[str] = (), final: bool = False) -> StepOutcome:
        """One turn. `tool_code`: the caller's own parse of the tool calls (the action is then not
        searched for them); `final`: the action is the final answer, whatever it contains."""
        ...

    async def close(self) -> None:
        """Frees what the episode holds (its interpreter); called once, on finish or expiry."""
        ...


EnvironmentFactory = Callable[[EnvironmentContext, EpisodeStartRequest], Environment]


def final_answer_bonus(action: str, bonus: float) -> float:
    """The format term: `bonus` when the final answer is boxed or in <answer> tags."""
    if not bonus:
        return 0.0
    boxed = "\\boxed{" in action or "\\fbox{" in action
    tagged = "<answer>" in action and "</answer>" in action
    return bonus if boxed or tagged else 0.0


def turn_limit(request: EpisodeStartRequest, own: int) -> int:
    return min(request.max_turns, own) if request.max_turns else own


REGISTRY_DOC: Mapping[str, str] = {
    "python_tool": "code blocks run in a persistent sandboxed interpreter; the final answer is graded",
    "code_feedback": "a program is run on the label's visible tests (failures are the feedback), graded "
    "on the hidden ones",
}
