"""Hostile bodies on /v1/score: a 4xx naming the problem or a 200 with finite numbers, never a 5xx."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.served import Served
from tests.reliability.strategies import json_labels, json_values, nested

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

samples = st.fixed_dictionaries(
    {},
    optional={
        "prompt": st.text(max_size=60) | json_values,
        "response": st.text(max_size=200) | json_values,
        "label": json_labels(),
        "metadata": st.dictionaries(st.text(max_size=8), st.text(max_size=8) | json_values, max_size=3),
        "surprise": json_values,
    },
)
score_bodies = st.fixed_dictionaries(
    {"samples": st.lists(samples, max_size=4) | json_values},
    optional={
        "timeout_s": st.floats(allow_nan=False, allow_infinity=False) | json_values,
        "request_id": st.text(max_size=80) | json_values,
    },
)


@pytest.fixture(scope="module")
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.http_url, timeout=30) as client:
        yield client


def post(http: httpx.Client, content: bytes) -> httpx.Response:
    reply = http.post("/v1/score", content=content, headers={"content-type": "application/json"})
    assert reply.status_code < 500, reply.text
    if reply.status_code == 200:
        results = reply.json()["results"]
        for result in results:
            numbers = [result["reward"], result["score"], *result["logs"].values()]
            assert all(math.isfinite(v) for v in numbers), result
    else:
        assert 400 <= reply.status_code < 500
    return reply


@FUZZ
@given(body=score_bodies | json_values)
def test_any_json_body_is_4xx_or_finite_200(http: httpx.Client, body: Any) -> None:
    reply = post(http, json.dumps(body).encode())
    if reply.status_code == 200:
        assert len(reply.json()["results"]) == len(body["samples"])


@FUZZ
@given(content=st.binary(max_size=300))
def test_arbitrary_bytes_never_5xx(http: httpx.Client, content: bytes) -> None:
    post(http, content)


@pytest.mark.parametrize("depth", [10, 500])
def test_deeply_nested_labels_are_scored(http: httpx.Client, depth: int) -> None:
    label = json.dumps({"grader": "math", "answer": nested(depth)})
    reply = post(http, json.dumps({"samples": [{"response": "\\boxed{1}", "label": label}]}).encode())
    assert reply.status_code == 200


def test_body_nested_past_the_parser_limit_is_4xx(http: httpx.Client) -> None:
    content = b'{"samples": [{"response": "a", "metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}]}"
    assert post(http, content).status_code == 400


@pytest.mark.parametrize("value", [float("nan"), float("-inf")], ids=["nan", "-infinity"])
def test_non_finite_timeout_is_a_422(http: httpx.Client, value: float) -> None:
    body = json.dumps({"samples": [{"response": "a"}], "timeout_s": value}).encode()
    assert post(http, body).status_code == 422


@pytest.mark.parametrize(
    "body",
    [
        {"samples": [{"response": "a", "label": '{"answer": NaN}'}]},
        {"samples": [{"response": "a"}], "timeout_s": float("inf")},
    ],
    ids=["nan-inside-label-text", "infinite-timeout"],
)
def test_non_finite_numbers_that_validate_are_scored(http: httpx.Client, body: dict[str, Any]) -> None:
    assert post(http, json.dumps(body).encode()).status_code == 200
