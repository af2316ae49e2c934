"""Hostile bodies on OpenRLHF's /get_reward: always 200 with finite floats, or 400 for a body that is
not an object with a `query` list (413 over a limit). Never a 5xx: OpenRLHF retries five times, then
crashes the training run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.served import MAX_BODY_BYTES, MAX_SAMPLES, Served
from tests.reliability.strategies import (
    assert_openrlhf_reply,
    is_openrlhf_shape,
    json_values,
    nested,
    openrlhf_bodies,
)

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.http_url, timeout=30) as client:
        yield client


def post(http: httpx.Client, content: bytes) -> httpx.Response:
    reply = http.post("/get_reward", content=content, headers={"content-type": "application/json"})
    assert reply.status_code < 500, reply.text
    return reply


def check(reply: httpx.Response, body: Any) -> None:
    if not is_openrlhf_shape(body):
        assert reply.status_code == 400, (body, reply.text)
        assert reply.json()["error"]["type"] == "invalid_body"
    elif len(body["query"]) > MAX_SAMPLES:
        assert reply.status_code == 413, reply.text
    else:
        assert reply.status_code == 200, (body, reply.text)
        assert_openrlhf_reply(reply.json(), len(body["query"]))


@FUZZ
@given(body=json_values)
def test_any_json_body_is_scored_or_rejected_with_400(http: httpx.Client, body: Any) -> None:
    check(post(http, json.dumps(body).encode()), body)


@FUZZ
@given(
    body=st.fixed_dictionaries(
        {"query": json_values | st.lists(json_values, max_size=5)},
        optional={"prompts": json_values, "labels": json_values | st.lists(json_values, max_size=5)},
    )
)
def test_wrong_types_inside_openrlhf_keys(http: httpx.Client, body: dict[str, Any]) -> None:
    check(post(http, json.dumps(body).encode()), body)


@FUZZ
@given(body=openrlhf_bodies())
def test_openrlhf_shaped_bodies_always_get_finite_rewards(http: httpx.Client, body: dict[str, Any]) -> None:
    reply = post(http, json.dumps(body).encode())
    assert reply.status_code == 200, reply.text
    assert_openrlhf_reply(reply.json(), len(body["query"]))


@FUZZ
@given(content=st.binary(max_size=300))
def test_arbitrary_bytes_never_5xx(http: httpx.Client, content: bytes) -> None:
    reply = post(http, content)
    try:
        body = json.loads(content)
    except ValueError:
        assert reply.status_code == 400, reply.text
        return
    check(reply, body)


@pytest.mark.parametrize(
    "content",
    [
        b'{"query": ["\xff\xfe"], "prompts": [""], "labels": [""]}',
        b'{"query": ["a"], "prompts": ["\xc3\x28"], "labels": [""]}',
        b'{"query": ["a"]' + b"\x00",
    ],
    ids=["invalid-utf8-query", "invalid-utf8-prompt", "trailing-nul"],
)
def test_invalid_utf8_is_a_clear_400(http: httpx.Client, content: bytes) -> None:
    reply = post(http, content)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["type"] == "invalid_json"


def test_a_utf8_bom_is_ignored(http: httpx.Client) -> None:
    reply = post(http, b"\xef\xbb\xbf" + b'{"query": ["a"], "prompts": [""], "labels": [""]}')
    assert reply.status_code == 200, reply.text  # RFC 8259 lets a parser ignore a BOM; Python's does
    assert_openrlhf_reply(reply.json(), 1)


@pytest.mark.parametrize("depth", [10, 200, 900])
def test_deeply_nested_json_labels_get_a_reward(http: httpx.Client, depth: int) -> None:
    labels = [nested(depth), json.dumps({"grader": "math", "answer": nested(depth)}), "[" * 100_000]
    body = {"query": ["\\boxed{1}"] * 3, "prompts": [""] * 3, "labels": labels}
    reply = post(http, json.dumps(body).encode())
    assert reply.status_code == 200, reply.text
    assert_openrlhf_reply(reply.json(), 3)


def test_body_nested_past_the_parser_limit_is_a_400(http: httpx.Client) -> None:
    content = b'{"query": ["a"], "labels": [' + b"[" * 5000 + b"]" * 5000 + b"]}"
    reply = post(http, content)
    assert reply.status_code == 400
    assert "depth" in reply.json()["error"]["message"]


def test_huge_strings_up_to_the_limit_are_scored_beyond_it_413(http: httpx.Client) -> None:
    fits = "x" * (MAX_BODY_BYTES - 1024)
    reply = post(http, json.dumps({"query": [fits], "prompts": [""], "labels": [fits[:100]]}).encode())
    assert reply.status_code == 200, reply.text
    assert_openrlhf_reply(reply.json(), 1)
    reply = post(http, json.dumps({"query": ["x" * MAX_BODY_BYTES], "prompts": [""]}).encode())
    assert reply.status_code == 413
    assert "max_body_bytes" in reply.json()["error"]["message"]


def test_numbers_at_the_edges_of_json_are_labels_not_crashes(http: httpx.Client) -> None:
    labels: list[Any] = [2**63 - 1, -(2**63), 1e308, -1e-320, 0, {"answer": 2**64 - 1}]
    body = {"query": ["\\boxed{1}"] * len(labels), "labels": labels}
    reply = post(http, json.dumps(body).encode())
    assert reply.status_code == 200, reply.text
    assert_openrlhf_reply(reply.json(), len(labels))


@pytest.mark.parametrize(
    "body",
    [
        {"query": ["a"], "prompts": [""], "labels": [float("nan")]},
        {"query": ["a"], "prompts": [""], "labels": [{"grader": "math", "answer": float("inf")}]},
        {"query": ["a\ud800"], "prompts": [""], "labels": [""]},
        {"query": ["a"], "prompts": [""], "labels": [10**400]},
    ],
    ids=["nan-label", "infinity-in-object-label", "lone-surrogate", "integer-beyond-double"],
)
def test_python_json_extensions_get_a_fallback_not_a_400(http: httpx.Client, body: dict[str, Any]) -> None:
    reply = post(http, json.dumps(body).encode("utf-8", "surrogatepass"))
    assert reply.status_code == 200, reply.text
    assert_openrlhf_reply(reply.json(), 1)
