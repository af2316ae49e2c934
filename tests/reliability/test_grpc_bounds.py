"""What a gRPC client can make the service keep or parse.

A 1 MB `request_id` used to be echoed back whole (HTTP capped its header at 64 characters),
and metadata maps were copied whole into a dict. Request ids are now capped on every path
and metadata is bounded at the transport.
"""

from __future__ import annotations

import grpc
import httpx

from arbiter.v1 import reward_pb2 as pb
from services.common.logs import MAX_REQUEST_ID
from services.transports.server import GraderServer
from tests.helpers import rules_grader, server_settings

LOOSE = [("grpc.max_metadata_size", 1 << 26), ("grpc.absolute_max_metadata_size", 1 << 26)]


async def test_request_ids_are_capped_and_metadata_is_bounded() -> None:
    server = GraderServer("rules", rules_grader(), server_settings())
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.grpc_target, options=LOOSE) as channel:
            score = channel.unary_unary(
                "/arbiter.v1.RewardService/Score",
                request_serializer=pb.ScoreRequest.SerializeToString,
                response_deserializer=pb.ScoreResponse.FromString,
            )
            request = pb.ScoreRequest(samples=[pb.Sample(response="x")], request_id="r" * 1_000_000)
            reply = await score(request, timeout=30)
            assert reply.request_id == "r" * MAX_REQUEST_ID
            reply = await score(
                pb.ScoreRequest(samples=[pb.Sample(response="x")]),
                metadata=[("x-request-id", "m" * 5000)],
                timeout=30,
            )
            assert reply.request_id == "m" * MAX_REQUEST_ID
            flood = [(f"k{i}", "v") for i in range(20_000)]  # ~200 KB of metadata
            try:
                await score(pb.ScoreRequest(samples=[pb.Sample(response="x")]), metadata=flood, timeout=30)
                raise AssertionError("a 200 KB metadata map was accepted")
            except grpc.aio.AioRpcError as exc:
                assert exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        async with httpx.AsyncClient(base_url=server.http_url) as http:
            body = {"samples": [{"response": "x"}], "request_id": "h" * 100_000}
            answer = (await http.post("/v1/score", json=body)).json()
            assert answer["request_id"] == "h" * MAX_REQUEST_ID
            assert (await http.get("/healthz")).status_code == 200
    finally:
        await server.stop()
