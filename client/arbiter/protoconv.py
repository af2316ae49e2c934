"""Contract models <-> protobuf messages; the one place that knows both shapes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from arbiter.contract import (
    EpisodeFinishRequest,
    EpisodeFinishResponse,
    EpisodeStartRequest,
    EpisodeStartResponse,
    EpisodeStepRequest,
    EpisodeStepResponse,
    GraderInfo,
    Result,
    Sample,
    ScoreRequest,
    ScoreResponse,
    Status,
)
from arbiter.v1 import reward_pb2 as pb

_STATUS_TO_PB: dict[Status, pb.Status] = {
    status: cast("pb.Status", pb.Status.Value(f"STATUS_{status.value}")) for status in Status
}
_PB_TO_STATUS = {value: status for status, value in _STATUS_TO_PB.items()}


def sample_to_pb(sample: Sample) -> pb.Sample:
    return pb.Sample(
        prompt=sample.prompt, response=sample.response, label=sample.label, metadata=sample.metadata
    )


def sample_from_pb(message: pb.Sample) -> Sample:
    return Sample(
        prompt=message.prompt,
        response=message.response,
        label=message.label,
        metadata=dict(message.metadata),
    )


def result_to_pb(result: Result) -> pb.Result:
    return pb.Result(
        reward=result.reward,
        score=result.score,
        status=_STATUS_TO_PB[result.status],
        detail=result.detail,
        logs=result.logs,
        prediction=result.prediction,
    )


def result_from_pb(message: pb.Result) -> Result:
    status = _PB_TO_STATUS.get(message.status)
    if status is None:
        raise ValueError(f"unknown status {message.status}")
    return Result(
        reward=message.reward,
        score=message.score,
        status=status,
        detail=message.detail,
        logs=dict(message.logs),
        prediction=message.prediction,
    )


def info_to_pb(info: GraderInfo) -> pb.GraderInfo:
    return pb.GraderInfo(
        name=info.name,
        version=info.version,
        config_hash=info.config_hash,
        capabilities=info.capabilities,
        log_keys=info.log_keys,
    )


def info_from_pb(message: pb.GraderInfo) -> GraderInfo:
    return GraderInfo(
        name=message.name,
        version=message.version,
        config_hash=message.config_hash,
        capabilities=list(message.capabilities),
        log_keys=list(message.log_keys),
    )


def request_to_pb(request: ScoreRequest) -> pb.ScoreRequest:
    return pb.ScoreRequest(
        samples=[sample_to_pb(s) for s in request.samples],
        request_id=request.request_id,
        timeout_s=request.timeout_s,
    )


def response_to_pb(results: Sequence[Result], info: GraderInfo, request_id: str) -> pb.ScoreResponse:
    return pb.ScoreResponse(
        results=[result_to_pb(r) for r in results], grader=info_to_pb(info), request_id=request_id
    )


def response_from_pb(message: pb.ScoreResponse) -> ScoreResponse:
    return ScoreResponse(
        results=[result_from_pb(r) for r in message.results],
        grader=info_from_pb(message.grader),
        request_id=message.request_id,
    )


# ---- episodes ----


def start_from_pb(message: pb.EpisodeStartRequest) -> EpisodeStartRequest:
    return EpisodeStartRequest(
        episode_id=message.episode_id,
        environment=message.environment,
        prompt=message.prompt,
        label=message.label,
        metadata=dict(message.metadata),
        max_turns=message.max_turns,
    )


def start_to_pb(answer: EpisodeStartResponse) -> pb.EpisodeStartResponse:
    return pb.EpisodeStartResponse(
        episode_id=answer.episode_id,
        observation=answer.observation,
        status=_STATUS_TO_PB[answer.status],
        detail=answer.detail,
        max_turns=answer.max_turns,
    )


def step_from_pb(message: pb.EpisodeStepRequest) -> EpisodeStepRequest:
    return EpisodeStepRequest(
        episode_id=message.episode_id,
        turn=message.turn,
        action=message.action,
        tool_code=list(message.tool_code),
        final=message.final,
    )


def step_to_pb(answer: EpisodeStepResponse) -> pb.EpisodeStepResponse:
    return pb.EpisodeStepResponse(
        episode_id=answer.episode_id,
        turn=answer.turn,
        feedback=answer.feedback,
        reward=answer.reward,
        score=answer.score,
        done=answer.done,
        status=_STATUS_TO_PB[answer.status],
        detail=answer.detail,
        logs=answer.logs,
    )


def finish_from_pb(message: pb.EpisodeFinishRequest) -> EpisodeFinishRequest:
    return EpisodeFinishRequest(episode_id=message.episode_id)


def finish_to_pb(answer: EpisodeFinishResponse) -> pb.EpisodeFinishResponse:
    return pb.EpisodeFinishResponse(
        episode_id=answer.episode_id,
        reward=answer.reward,
        score=answer.score,
        turns=answer.turns,
        status=_STATUS_TO_PB[answer.status],
        detail=answer.detail,
        logs=answer.logs,
    )
