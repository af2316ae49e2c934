"""Real gateways on loopback for the adapter tests: embedded defaults, or a given config, stoppable."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import arbiter.adapters.gateway
from services import catalog
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer


def gateway_settings(gateway: dict[str, Any] | None = None, grpc_port: int = 0) -> ArbiterSettings:
    """Embedded defaults (what `./scripts/serve.sh` runs) on loopback, plus `gateway` overrides."""
    return ArbiterSettings.model_validate(
        {"gateway": {"host": "127.0.0.1", "http_port": 0, "grpc_port": grpc_port, **(gateway or {})}}
    )


def make_gateway(gateway: dict[str, Any] | None = None, grpc_port: int = 0) -> GraderServer:
    return catalog.make_server("gateway", gateway_settings(gateway, grpc_port))


@contextmanager
def adapter_env(monkeypatch: pytest.MonkeyPatch, target: str, **env: str) -> Iterator[None]:
    """The environment a trainer worker would have, and a fresh process's (absent) connection.

    Undone on exit: ARBITER_GATEWAY would also read as the settings' `gateway` section
    (ARBITER_<SECTION>) if a gateway were configured from this environment afterwards.
    """
    with monkeypatch.context() as patch:
        patch.setenv("ARBITER_GATEWAY", target)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(arbiter.adapters.gateway, "_connection", None)
        try:
            yield
        finally:
            if arbiter.adapters.gateway._connection is not None:
                arbiter.adapters.gateway._connection.close()
