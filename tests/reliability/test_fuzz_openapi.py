"""Schemathesis against the OpenAPI spec of every HTTP service: whatever the spec lets a client
send (and the negative cases it does not), the answer is never a 5xx and conforms to the
documented schema and content type.

The operations are driven through schemathesis' hypothesis strategies directly: its pytest
plugin does not load under pytest 9 (it reads `Function._nodeid`).
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import CheckFunction
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.reliability.served import SERVERS, serve_in_thread

CHECKS: list[CheckFunction] = [not_a_server_error, response_schema_conformance, content_type_conformance]
METRICS_CHECKS: list[CheckFunction] = CHECKS
EXAMPLES_PER_OPERATION = 20


@pytest.mark.parametrize("name", sorted(SERVERS))
@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_openapi_operations_never_5xx(name: str, mode: str) -> None:
    with serve_in_thread(name, SERVERS[name]) as served:
        schema = schemathesis.openapi.from_url(f"{served.http_url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
        paths = {operation.path for operation in operations}
        assert {"/v1/score", "/get_reward", "/v1/info", "/healthz", "/readyz"} <= paths, paths
        generation = schemathesis.GenerationMode(mode)
        strategies: list[st.SearchStrategy[Any]] = [
            op.as_strategy(generation_mode=generation) for op in operations
        ]
        cases = st.one_of(strategies)

        @given(case=cases)
        @settings(
            max_examples=EXAMPLES_PER_OPERATION * len(operations),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def fuzz(case: schemathesis.Case[Any]) -> None:
            checks = METRICS_CHECKS if case.operation.path == "/metrics" else CHECKS
            case.call_and_validate(base_url=served.http_url, checks=checks, timeout=30)

        fuzz()


def test_metrics_content_type_is_documented() -> None:
    with serve_in_thread("reward_rules", SERVERS["reward_rules"]) as served:
        schema = schemathesis.openapi.from_url(f"{served.http_url}/openapi.json")
        operation = schema["/metrics"]["GET"]
        case = operation.Case()
        case.call_and_validate(base_url=served.http_url, checks=[content_type_conformance], timeout=30)
