"""Malformed protobuf bytes on arbiter.v1.RewardService/Score: a gRPC error, never a dead server."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.v1 import reward_pb2 as pb
from tests.reliability.served import Served

SCORE = "/arbiter.v1.RewardService/Score"
# The servicer decodes the request itself, so malformed bytes are INVALID_ARGUMENT.
FRAMEWORK_ERRORS = {grpc.StatusCode.INVALID_ARGUMENT}


@pytest.fixture(scope="module")
def channel(served: Served) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(served.grpc_target) as chan:
        yield chan


def raw_score(channel: grpc.Channel) -> grpc.UnaryUnaryMultiCallable:
    # No serializers: the bytes go on the wire exactly as given.
    return channel.unary_unary(SCORE, request_serializer=None, response_deserializer=None)


def still_scores(channel: grpc.Channel) -> None:
    request = pb.ScoreRequest(samples=[pb.Sample(prompt="p", response="<think>a</think> 1", label="")])
    reply = pb.ScoreResponse.FromString(raw_score(channel)(request.SerializeToString(), timeout=30))
    assert len(reply.results) == 1


def parses(content: bytes) -> bool:
    try:
        pb.ScoreRequest.FromString(content)
    except DecodeError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.binary(max_size=200)
    | st.builds(
        lambda head, tail: head + tail, st.sampled_from([b"\x0a", b"\x0a\xff\xff\xff\xff\x0f"]), st.binary()
    )
)
def test_random_bytes_get_a_grpc_error_or_a_reply(channel: grpc.Channel, content: bytes) -> None:
    try:
        reply = raw_score(channel)(content, timeout=30)
    except grpc.RpcError as exc:
        code = exc.code()
        if parses(content):  # a valid message the servicer refused, e.g. a negative timeout_s
            assert code is grpc.StatusCode.INVALID_ARGUMENT, exc.details()
        else:
            assert code in FRAMEWORK_ERRORS, (code, exc.details())
        return
    assert parses(content)
    pb.ScoreResponse.FromString(reply)


@pytest.mark.parametrize(
    "content",
    [
        b"\x0a\x80\x80\x80\x80\x10",  # a sample whose length varint claims 4 GiB
        b"\x0a\x05\x12\x03\xff\xfe\xfd",  # a response string that is not UTF-8
        b"\xff" * 64,  # no valid tag at all
        b"\x0a\x02\x0a",  # truncated nested message
    ],
    ids=["huge-length", "invalid-utf8", "garbage", "truncated"],
)
def test_malformed_protobuf_then_the_server_still_scores(channel: grpc.Channel, content: bytes) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        raw_score(channel)(content, timeout=30)
    assert caught.value.code() in FRAMEWORK_ERRORS, caught.value.details()
    still_scores(channel)


@pytest.mark.parametrize("timeout_s", [float("nan"), -1.0])
def test_bad_timeout_is_invalid_argument(channel: grpc.Channel, timeout_s: float) -> None:
    request = pb.ScoreRequest(samples=[pb.Sample(response="a")], timeout_s=timeout_s)
    with pytest.raises(grpc.RpcError) as caught:
        raw_score(channel)(request.SerializeToString(), timeout=30)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    still_scores(channel)


def test_malformed_protobuf_is_invalid_argument(channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        raw_score(channel)(b"\xff" * 64, timeout=30)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
