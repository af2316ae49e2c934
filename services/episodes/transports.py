"""The episode API on the served grader's two faces: HTTP routes and arbiter.v1.EpisodeService.

HTTP: POST /v1/episodes/start, /v1/episodes/step, /v1/episodes/finish (JSON mirrors of the proto
messages, the contract models of client/arbiter/contract.py), GET /v1/episodes/stats. Both faces
go through the worker's EpisodeRouter, which sends each call to the worker holding it. A body
that is not a valid request is a 422; everything about the episode itself is in the answer's
`status`, with HTTP 200.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
import orjson
from fastapi import APIRouter, Response
from pydantic import BaseModel

from arbiter.contract import (
    EpisodeFinishRequest,
    EpisodeFinishResponse,
    EpisodeStartRequest,
    EpisodeStartResponse,
    EpisodeStepRequest,
    EpisodeStepResponse,
    Status,
)
from arbiter.protoconv import (
    finish_from_pb,
    finish_to_pb,
    start_from_pb,
    start_to_pb,
    step_from_pb,
    step_to_pb,
)
from arbiter.v1 import reward_pb2 as pb
from services.episodes.routing import EpisodeRouter

EPISODE_SERVICE = pb.DESCRIPTOR.services_by_name["EpisodeService"].full_name


def _json(model: BaseModel) -> Response:
    return Response(orjson.dumps(model.model_dump(mode="json")), media_type="application/json")


def episode_router(manager: EpisodeRouter) -> APIRouter:
    router = APIRouter()

    @router.post("/v1/episodes/start", response_model=EpisodeStartResponse)
    async def start(request: EpisodeStartRequest) -> Response:
        return _json(await manager.start(request))

    @router.post("/v1/episodes/step", response_model=EpisodeStepResponse)
    async def step(request: EpisodeStepRequest) -> Response:
        return _json(await manager.step(request))

    @router.post("/v1/episodes/finish", response_model=EpisodeFinishResponse)
    async def finish(request: EpisodeFinishRequest) -> Response:
        return _json(await manager.finish(request))

    @router.get("/v1/episodes/stats")
    async def stats() -> Response:
        return Response(orjson.dumps(await manager.stats()), media_type="application/json")

    return router


# ---- gRPC ----


M = TypeVar("M")
R = TypeVar("R")


def _unary(
    convert: Callable[[Any], M], call: Callable[[M], Awaitable[R]], back: Callable[[R], Any]
) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    async def handle(message: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            request = convert(message)
        except ValueError as exc:  # pydantic's ValidationError: an empty id, a negative turn
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc)[:1000])
        return back(await call(request))

    return handle


def episode_grpc_handler(manager: EpisodeRouter) -> grpc.GenericRpcHandler:
    handlers = {
        "StartEpisode": grpc.unary_unary_rpc_method_handler(
            _unary(start_from_pb, manager.start, start_to_pb),
            request_deserializer=pb.EpisodeStartRequest.FromString,
            response_serializer=pb.EpisodeStartResponse.SerializeToString,
        ),
        "StepEpisode": grpc.unary_unary_rpc_method_handler(
            _unary(step_from_pb, manager.step, step_to_pb),
            request_deserializer=pb.EpisodeStepRequest.FromString,
            response_serializer=pb.EpisodeStepResponse.SerializeToString,
        ),
        "FinishEpisode": grpc.unary_unary_rpc_method_handler(
            _unary(finish_from_pb, manager.finish, finish_to_pb),
            request_deserializer=pb.EpisodeFinishRequest.FromString,
            response_serializer=pb.EpisodeFinishResponse.SerializeToString,
        ),
    }
    return grpc.method_handlers_generic_handler(EPISODE_SERVICE, handlers)


__all__ = ["EPISODE_SERVICE", "Status", "episode_grpc_handler", "episode_router"]
