"""Judge service settings on loopback fakes, for the judge tests and others that need a judge."""

from __future__ import annotations

from typing import Any

from services.judge_proxy.settings import JudgeServiceSettings
from tests.judge_proxy.fake_openai import FakeOpenAI


def judge_settings(
    *fakes: FakeOpenAI, upstream: dict[str, Any] | None = None, **overrides: Any
) -> JudgeServiceSettings:
    """Settings on port 0 with one upstream per fake, in order (names u0, u1, ...)."""
    upstreams = [
        {"name": f"u{i}", "base_url": f.url, "model": f.model, **(upstream or {})}
        for i, f in enumerate(fakes)
    ]
    base: dict[str, Any] = {
        "host": "127.0.0.1",
        "http_port": 0,
        "grpc_port": -1,
        "deadline_s": 10.0,
        "upstreams": upstreams,
        "retry": {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "cooldown_s": 30.0},
    }
    base.update(overrides)
    return JudgeServiceSettings.model_validate(base)
