"""The gateway's in-process path runs the kit once.

`InProcessBackend` used to call a second `ScoringEngine.score`: a second cache key and lookup,
dedupe map, micro-batch wait and result finishing, all thrown away by the composition. Now the
gateway's engine does those once, and the component's grader is called directly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from arbiter.contract import Result, Sample, Status
from services.catalog import make_server
from services.gateway.backends import InProcessBackend
from services.gateway.grader import GatewayGrader
from services.settings_tree import ArbiterSettings


async def test_a_component_in_process_is_graded_without_a_second_engine_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = ArbiterSettings.model_validate({"gateway": {"http_port": 0, "grpc_port": -1}})
    server = make_server("gateway", settings)
    await server.start()
    try:
        gateway = server.engine.grader
        assert isinstance(gateway, GatewayGrader)
        backend = gateway.backends["reward_rules"]
        assert isinstance(backend, InProcessBackend)

        async def second_pass(samples: Sequence[Sample], *args: object, **kwargs: object) -> list[Result]:
            raise AssertionError("the component went through a second ScoringEngine.score")

        monkeypatch.setattr(backend.engine, "score", second_pass)
        sample = Sample(response="<think>a</think> \\boxed{4}", label=json.dumps({"grader": "format"}))
        [result] = await server.engine.score([sample])
        assert result.status is Status.OK and result.reward == 1.0
        assert result.logs["rules/format_ok"] == 1.0  # the grader's own logs still come through
    finally:
        await server.stop()


async def test_grading_past_the_deadline_is_a_timeout() -> None:
    settings = ArbiterSettings.model_validate({"gateway": {"http_port": 0, "grpc_port": -1}})
    server = make_server("gateway", settings)
    await server.start()
    try:
        backend = server.engine.grader.backends["reward_rules"]  # type: ignore[attr-defined]
        results = await backend.engine.grade([Sample(response="x"), Sample(response="y")], timeout_s=0.0)
        assert [r.status for r in results] == [Status.TIMEOUT, Status.TIMEOUT]
    finally:
        await server.stop()
