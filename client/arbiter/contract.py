"""The scoring contract as pydantic models: the JSON mirror of proto/arbiter/v1/reward.proto.

These are the only shapes that cross a service boundary; handlers, the client and the
gRPC converters all speak them, so HTTP and gRPC cannot drift apart.
"""

from __future__ import annotations

import json
import math
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

# extra_logs names a trainer reserves for itself (they go to wandb as train/<key>, beside its own
# train/reward, train/score and train/kl); a grader must never emit them.
RESERVED_LOG_KEYS = frozenset({"reward", "score", "kl", "rewards", "scores"})
# A log a grader sets to 1 on a result that no cache may keep (see `Result.not_cached`). A log
# rather than a field, so that it crosses every hop (gRPC, HTTP, the gateway) and the trainer sees it.
NO_CACHE_KEY = "cache/skip"


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


# A reward or score: NaN and infinities never reach a trainer (they would poison its advantages).
Finite = Annotated[float, AfterValidator(_finite)]


class Status(StrEnum):
    OK = "OK"
    INVALID_INPUT = "INVALID_INPUT"
    TIMEOUT = "TIMEOUT"
    GRADER_ERROR = "GRADER_ERROR"
    UPSTREAM_ERROR = "UPSTREAM_ERROR"
    OVERLOADED = "OVERLOADED"


# The one-hot status flags every result carries in its logs (`status/ok`, `status/timeout`, ...).
# Here, beside Status, so trainer-side code can name them without importing the server's engine.
STATUS_KEYS = {status: f"status/{status.value.lower()}" for status in Status}
CACHED_KEY = "cache/hit"  # 1 when the result came from the cache


class _Strict(BaseModel):
    # strict: "1" is not a float and 1 is not a string; a trainer bug should be loud.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Sample(_Strict):
    prompt: str = ""
    response: str
    label: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)

    def label_json(self) -> dict[str, Any] | None:
        """The label as a JSON object when it is one (`{"grader": ...}`), else None."""
        text = self.label.strip()
        if not text.startswith("{"):
            return None
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # '{"x":' + '[' * 100000 nests past the parser's depth
            return None
        return value if isinstance(value, dict) else None


class Result(_Strict):
    reward: Finite
    score: Finite
    status: Status = Field(default=Status.OK, strict=False)  # "OK" from JSON, Status.OK in code
    detail: str = ""
    logs: dict[str, float] = Field(default_factory=dict)
    prediction: str = Field(default="", description="the final answer read from the response, if any")

    @property
    def cacheable(self) -> bool:
        """Whether a cache may keep this result (graders say no through `not_cached`)."""
        return not self.logs.get(NO_CACHE_KEY)

    def not_cached(self) -> Result:
        """This result, marked so that no cache keeps it: the service's sample cache, the gateway's,
        a shared Redis. For verdicts that are right now but should not outlive the moment, such
        as a fallback judge's while the primary is down: once the primary is back, the same sample
        is graded by it again. The engine honours the mark; the gateway passes it on from any
        component to the composed reward."""
        return self.model_copy(update={"logs": {**self.logs, NO_CACHE_KEY: 1.0}})

    @field_validator("logs")
    @classmethod
    def _finite_logs(cls, value: dict[str, float]) -> dict[str, float]:
        for key, number in value.items():
            if key in RESERVED_LOG_KEYS:
                raise ValueError(f"log key {key!r} is reserved by the trainer")
            if not math.isfinite(number):
                raise ValueError(f"log {key!r} must be a finite number")
        return value


class GraderInfo(_Strict):
    name: str
    version: str
    config_hash: str
    capabilities: list[str] = Field(default_factory=list)
    log_keys: list[str] = Field(default_factory=list, description="logs every result of the grader carries")


class ScoreRequest(_Strict):
    samples: list[Sample]
    request_id: str = ""
    timeout_s: float = Field(default=0.0, ge=0.0, description="0 means the server's default deadline")


class ScoreResponse(_Strict):
    results: list[Result]
    grader: GraderInfo
    request_id: str = ""


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's `--reward.remote_url` body: parallel lists, usually of length 1.

    Lax on purpose: /get_reward turns a bad item into a fallback reward plus a flag
    instead of rejecting the body (a sample left without a reward crashes OpenRLHF's training),
    so per-item checks live in arbiter/openrlhf.py, which builds this from the body
    and reads it.
    """

    model_config = ConfigDict(extra="allow")

    query: list[Any]
    prompts: list[Any] | None = None
    labels: list[Any] | None = None


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


# ---- Episodes: multi-turn, stateful sessions beside /v1/score (proto: arbiter.v1.EpisodeService) ----
# An episode is the caller's: it names it (`episode_id`), so that any call can be retried and answers
# the same. Every answer carries `status`; anything but OK is flagged in `logs` (`episode/lost`,
# `episode/failed`) with a finite reward, never a silent zero.

EPISODE_ID_MAX = 256  # characters of a caller-chosen episode id
EPISODE_TOOL_CALLS_MAX = 64  # code cells in one step (each counts against the episode's tool-call limit)
# The logs of every episode answer (steps and finish), whatever its environment: a fixed key set,
# here so that trainer adapters name them without importing the service. Then, on the server,
# the emergence statistics of the whole trajectory as `trajectory/<key>`.
EPISODE_COUNTER_KEYS = (
    "episode/turns",
    "episode/tool_calls",
    "episode/tool_errors",
    "episode/tool_timeouts",
    "episode/tool_memory_kills",
    "episode/tool_cpu_s",
    "episode/truncated_outputs",
    "episode/over_tool_limit",
    "episode/replays",
    "episode/done",
    "episode/correct",
    "episode/grade_failed",
)
EPISODE_LOST_KEY = "episode/lost"  # 1: the episode is not held where the call landed (expired, lost)
EPISODE_FAILED_KEY = "episode/failed"  # 1: the call or the environment failed; the episode cannot go on


class EpisodeStartRequest(_Strict):
    episode_id: str = Field(min_length=1, max_length=EPISODE_ID_MAX)
    environment: str = Field(min_length=1, description="python_tool, code_feedback, ...")
    prompt: str = ""
    label: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)
    max_turns: int = Field(default=0, ge=0, description="0: the environment's own limit")


class EpisodeStartResponse(_Strict):
    episode_id: str
    observation: str = ""  # what the policy sees first (the prompt, as the environment presents it)
    status: Status = Field(default=Status.OK, strict=False)
    detail: str = ""
    max_turns: int = 0  # the episode's turn limit: the action of the last turn is graded


class EpisodeStepRequest(_Strict):
    episode_id: str = Field(min_length=1, max_length=EPISODE_ID_MAX)
    turn: int = Field(ge=0, description="0 for the first action: the same turn again is a retry")
    action: str
    tool_code: list[str] = Field(
        default_factory=list,
        max_length=EPISODE_TOOL_CALLS_MAX,
        description="tool calls as the caller's parser read them (code cells, run in order); "
        "when given, the action is not searched for tool calls",
    )
    final: bool = Field(default=False, description="the action is the final answer: graded now")

    @model_validator(mode="after")
    def _one_kind(self) -> EpisodeStepRequest:
        if self.final and self.tool_code:
            raise ValueError("a step is either tool calls or the final answer, not both")
        return self


class EpisodeStepResponse(_Strict):
    episode_id: str
    turn: int
    feedback: str = ""  # the environment's answer, appended to the policy's context
    reward: Finite = 0.0  # this step's reward (the episode's reward is the sum over its steps)
    score: Finite = 0.0  # the episode's correctness so far (the final answer's, once done)
    done: bool = False
    status: Status = Field(default=Status.OK, strict=False)
    detail: str = ""
    logs: dict[str, float] = Field(default_factory=dict)


class EpisodeFinishRequest(_Strict):
    episode_id: str = Field(min_length=1, max_length=EPISODE_ID_MAX)


class EpisodeFinishResponse(_Strict):
    episode_id: str
    reward: Finite = 0.0  # the sum of the step rewards
    score: Finite = 0.0  # the final answer's correctness
    turns: int = 0
    status: Status = Field(default=Status.OK, strict=False)
    detail: str = ""
    logs: dict[str, float] = Field(default_factory=dict)  # the whole trajectory's extra_logs
