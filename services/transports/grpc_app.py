"""The gRPC face of a served grader: arbiter.v1.RewardService, plus health and reflection."""

from __future__ import annotations

import time
from collections.abc import Sequence

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arbiter.contract import Sample
from arbiter.protoconv import info_to_pb, response_to_pb, sample_from_pb
from arbiter.v1 import reward_pb2 as pb
from services.common.logs import bounded_request_id, request_id_var
from services.common.offload import LARGE, maybe_off_loop
from services.scoring.engine import ScoringEngine
from services.transports.auth import GrpcAuthInterceptor

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["RewardService"].full_name
MAX_METADATA_BYTES = 16 * 1024  # all metadata of one call (gRPC's own default, made explicit)


def _metadata_request_id(context: grpc.aio.ServicerContext) -> str:
    """The x-request-id metadata value, without building a map of every entry the client sent."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id":
            return value if isinstance(value, str) else ""
    return ""


_SAMPLES_FIELD = pb.ScoreRequest.DESCRIPTOR.fields_by_name["samples"].number


def _varint(raw: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(raw) or shift > 63:
            raise DecodeError("truncated or overlong varint")
        byte = raw[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def parse_score_request(raw: bytes) -> pb.ScoreRequest:
    """`ScoreRequest.FromString(raw)`, one sample at a time: protobuf parses a whole message in C
    without letting go of the GIL (0.9 s for 4,000 samples of 700 metadata entries, the event loop
    frozen even with the parse in a thread); sample by sample, the loop gets its turns."""
    if len(raw) < LARGE:
        return pb.ScoreRequest.FromString(raw)
    view = memoryview(raw)
    rest = bytearray()
    pieces: list[tuple[int, int]] = []
    position = 0
    while position < len(raw):
        start = position
        key, position = _varint(raw, position)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, position = _varint(raw, position)
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        elif wire == 2:
            length, position = _varint(raw, position)
            if field == _SAMPLES_FIELD:
                pieces.append((position, position + length))
            position += length
        else:
            return pb.ScoreRequest.FromString(raw)  # groups: let protobuf itself decide
        if position > len(raw):
            raise DecodeError("truncated message")
        if not (field == _SAMPLES_FIELD and wire == 2):
            rest += view[start:position]
    request = pb.ScoreRequest.FromString(bytes(rest))
    for begin, end in pieces:
        request.samples.add().MergeFromString(raw[begin:end])
    return request


def _samples_from_pb(request: pb.ScoreRequest) -> list[Sample]:
    return [sample_from_pb(s) for s in request.samples]


class RewardServicer:
    def __init__(self, engine: ScoringEngine) -> None:
        self.engine = engine

    async def score_raw(self, raw: bytes, context: grpc.aio.ServicerContext) -> pb.ScoreResponse:
        """Score, decoding the request here: malformed bytes are INVALID_ARGUMENT, not UNKNOWN."""
        try:
            request = await maybe_off_loop(len(raw), parse_score_request, raw)
        except DecodeError as exc:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"the request is not an arbiter.v1.ScoreRequest: {exc}"
            )
        return await self.Score(request, context, len(raw))

    async def Score(
        self, request: pb.ScoreRequest, context: grpc.aio.ServicerContext, size: int | None = None
    ) -> pb.ScoreResponse:
        """`size`: the request's bytes on the wire; a large request is converted (samples in, results
        out) in a thread: 4,000 samples of 700 metadata entries each stalled the loop for seconds."""
        request_id = bounded_request_id(request.request_id or _metadata_request_id(context))
        token = request_id_var.set(request_id)
        metrics = self.engine.metrics
        started = time.monotonic()
        code = "OK"
        metrics.inflight.inc()
        try:
            server = self.engine.server
            if len(request.samples) > server.max_samples_per_request:
                code = "INVALID_ARGUMENT"
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"{len(request.samples)} samples in one request; the limit is "
                    f"{server.max_samples_per_request} (max_samples_per_request)",
                )
            if request.timeout_s < 0 or request.timeout_s != request.timeout_s:
                code = "INVALID_ARGUMENT"
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "timeout_s must be >= 0")
            if size is None:
                size = request.ByteSize()
            samples = await maybe_off_loop(size, _samples_from_pb, request)
            timeout = request.timeout_s or None
            remaining = context.time_remaining()
            if remaining is not None:  # the client's own gRPC deadline bounds ours
                timeout = min(timeout or remaining, max(remaining - 0.05, 0.001))
            results = await self.engine.score(samples, timeout)
            return await maybe_off_loop(
                max(size, 512 * len(results)), response_to_pb, results, self.engine.info, request_id
            )
        finally:
            metrics.inflight.dec()
            metrics.request_done("grpc", "Score", code, time.monotonic() - started)
            request_id_var.reset(token)

    async def Info(self, request: pb.InfoRequest, context: grpc.aio.ServicerContext) -> pb.GraderInfo:
        self.engine.metrics.request_done("grpc", "Info", "OK")
        return info_to_pb(self.engine.info)


def build_grpc_server(
    engine: ScoringEngine,
    token: str | None = None,
    reuse_port: bool = False,
    extra_handlers: Sequence[grpc.GenericRpcHandler] = (),
) -> tuple[grpc.aio.Server, health.aio.HealthServicer]:
    """An unstarted grpc.aio server with the reward, health and reflection services.

    `reuse_port` lets sibling worker processes bind the same port; otherwise a port already
    taken is an error (gRPC's own default would share it silently with any other server).
    `extra_handlers`: services of the server's extensions (services/scoring/extension.py)."""
    limit = engine.server.max_body_bytes
    server = grpc.aio.server(
        interceptors=[GrpcAuthInterceptor(token)] if token else None,
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", int(reuse_port)),
            # Metadata is parsed before any handler runs: keep it to what a client needs.
            ("grpc.max_metadata_size", MAX_METADATA_BYTES),
            ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
        ],
    )
    servicer = RewardServicer(engine)
    handlers = {
        "Score": grpc.unary_unary_rpc_method_handler(
            servicer.score_raw,
            request_deserializer=None,
            response_serializer=pb.ScoreResponse.SerializeToString,
        ),
        "Info": grpc.unary_unary_rpc_method_handler(
            servicer.Info,
            request_deserializer=pb.InfoRequest.FromString,
            response_serializer=pb.GraderInfo.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    if extra_handlers:
        server.add_generic_rpc_handlers(tuple(extra_handlers))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        [SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
        server,
    )
    return server, health_servicer


NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVING = health_pb2.HealthCheckResponse.SERVING
