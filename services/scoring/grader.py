"""What a grader is, to the kit: an async batch function plus its identity.

Graders never see HTTP, gRPC, caches or batching; the kit does all of that around them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from arbiter.contract import GraderInfo, Result, Sample, Status


@runtime_checkable
class Grader(Protocol):
    """Scores a batch of samples, one Result per sample, in order.

    A grader reports per-sample problems as Results with a non-OK status; it raises
    only when the whole batch failed (the kit then isolates the failing sample).
    `log_keys` are the logs every one of its results carries (missing ones are filled
    with 0), so a trainer sees the same extra_logs keys on every sample.
    """

    @property
    def info(self) -> GraderInfo: ...

    @property
    def log_keys(self) -> Sequence[str]: ...

    async def score(self, samples: Sequence[Sample]) -> list[Result]: ...

    async def aclose(self) -> None: ...


NONDETERMINISTIC = "nondeterministic"  # a capability: identical samples may get different results

# When the caller of each sample of the batch being graded stops waiting (time.monotonic instants,
# in the batch's order), set by the engine around `Grader.score`. A grader whose work can outlive a
# caller (an LLM judge's retries and upstream calls) ends each sample's work at its own deadline.
SAMPLE_DEADLINES: ContextVar[tuple[float, ...] | None] = ContextVar("arbiter_sample_deadlines", default=None)


@runtime_checkable
class HasMetrics(Protocol):
    """Optional: a grader with Prometheus metrics of its own, served at the kit's /metrics."""

    @property
    def metrics_registry(self) -> CollectorRegistry: ...


@runtime_checkable
class Startable(Protocol):
    """Optional: a grader with start-up work (discovery, pools) the kit awaits before serving."""

    async def start(self) -> None: ...


@runtime_checkable
class HasFailureReward(Protocol):
    """Optional: a grader whose failures are worth something else than the configured constant.

    The kit gives a failed sample `failure_reward(configured)` instead of `configured`
    (`fallback_reward`). A reward model's rewards have no fixed scale, so a constant may sit
    above them and make a failure a gain; it answers the lowest reward it gave lately.
    """

    def failure_reward(self, configured: float) -> float: ...


def config_hash(config: BaseModel | dict[str, Any]) -> str:
    """A short stable hash of a grader's effective configuration."""
    data = config.model_dump(mode="json") if isinstance(config, BaseModel) else config
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class GraderBase:
    """The identity half of the Grader protocol, for graders that set `_info` once at start-up
    (and `_log_keys`, usually a module constant)."""

    _info: GraderInfo
    _log_keys: Sequence[str] = ()

    @property
    def info(self) -> GraderInfo:
        return self._info

    @property
    def log_keys(self) -> Sequence[str]:
        return self._log_keys

    async def aclose(self) -> None:
        return None


class GraderUnavailableError(RuntimeError):
    """A grader cannot run on this machine (e.g. no sandbox); the message says what to install."""


class UnavailableGrader(GraderBase):
    """Stands in for a grader that could not be built, so its service still serves the others.

    Every sample routed to it gets GRADER_ERROR with the reason (and so the fallback reward
    and a `status/grader_error` flag): visible on each sample, never a silent zero.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.reason = reason
        self._info = GraderInfo(name=name, version="unavailable", config_hash="unavailable")

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        detail = f"{self._info.name} grader unavailable: {self.reason}"
        return [Result(reward=0.0, score=0.0, status=Status.GRADER_ERROR, detail=detail) for _ in samples]
