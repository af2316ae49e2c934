"""The scoring contract as pydantic models: the JSON mirror of proto/arbiter/v1/reward.proto.

These are the only shapes that cross a service boundary; handlers, the client and the
gRPC converters all speak them, so HTTP and gRPC cannot drift apart.
"""

from __future__ import annotations

import json
import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# extra_logs names a trainer reserves for itself (DESIGN.md); a grader must never emit them.
RESERVED_LOG_KEYS = frozenset({"reward", "score", "kl", "rewards", "scores"})


class Status(StrEnum):
    OK = "OK"
    INVALID_INPUT = "INVALID_INPUT"
    TIMEOUT = "TIMEOUT"
    GRADER_ERROR = "GRADER_ERROR"
    UPSTREAM_ERROR = "UPSTREAM_ERROR"
    OVERLOADED = "OVERLOADED"


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
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


class Result(_Strict):
    reward: float
    score: float
    status: Status = Field(default=Status.OK, strict=False)  # "OK" from JSON, Status.OK in code
    detail: str = ""
    logs: dict[str, float] = Field(default_factory=dict)
    prediction: str = Field(default="", description="the final answer read from the response, if any")

    @field_validator("reward", "score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

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
    instead of rejecting the body (DESIGN.md), so per-item checks live in the handler.
    """

    model_config = ConfigDict(extra="allow")

    query: list[Any]
    prompts: list[Any] | None = None
    labels: list[Any] | None = None


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]
