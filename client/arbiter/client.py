"""Async client of the scoring contract, over gRPC or HTTP.

The gateway, the trainer adapters, the CLI and the tests all talk to services through
this one class: one persistent gRPC channel or one pooled HTTP client per target.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contract import GraderInfo, OpenRLHFResponse, Sample, ScoreRequest, ScoreResponse
from arbiter.protoconv import info_from_pb, request_to_pb, response_from_pb
from arbiter.tls import ClientTLS, grpc_channel_credentials, grpc_channel_options, ssl_context
from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc

Transport = Literal["grpc", "http"]

_RETRYABLE_GRPC = {grpc.StatusCode.UNAVAILABLE}


class ArbiterClientError(Exception):
    """The service refused or failed the request; `code` is the HTTP status or gRPC code name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class ArbiterClient:
    def __init__(
        self,
        *,
        http_url: str | None = None,
        grpc_target: str | None = None,
        transport: Transport | None = None,
        timeout_s: float = 90.0,
        retries: int = 2,
        max_message_bytes: int = 64 * 1024 * 1024,
        token: str | None = None,
        tls: ClientTLS | None = None,
    ) -> None:
        """`token`: the bearer token of a service started with `auth_token_env`; `tls`: connect
        over TLS (gRPC) and verify HTTPS with its CA bundle, presenting its client certificate
        under mTLS. Without `tls`, gRPC is plaintext and an https:// URL uses the system's CAs."""
        if not http_url and not grpc_target:
            raise ValueError("give http_url, grpc_target or both")
        self.transport: Transport = transport or ("grpc" if grpc_target else "http")
        if self.transport == "grpc" and not grpc_target:
            raise ValueError("transport 'grpc' needs grpc_target")
        if self.transport == "http" and not http_url:
            raise ValueError("transport 'http' needs http_url")
        self.timeout_s = timeout_s
        self.retries = retries
        self._http = (
            httpx.AsyncClient(
                base_url=http_url.rstrip("/"),
                timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
                headers={"authorization": f"Bearer {token}"} if token else None,
                verify=ssl_context(tls) if tls is not None else True,
            )
            if http_url
            else None
        )
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            # A DNS name with several replicas (compose --scale, a headless k8s Service):
            # spread calls over all of them, not just the first address.
            ("grpc.lb_policy_name", "round_robin"),
        ]
        self._channel: grpc.aio.Channel | None = None
        if grpc_target and tls is not None:
            self._channel = grpc.aio.secure_channel(
                grpc_target, grpc_channel_credentials(tls), options=options + grpc_channel_options(tls)
            )
        elif grpc_target:
            self._channel = grpc.aio.insecure_channel(grpc_target, options=options)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._stub = (
            pb_grpc.RewardServiceStub(self._channel)  # type: ignore[no-untyped-call]
            if self._channel
            else None
        )

    async def __aenter__(self) -> ArbiterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._channel is not None:
            await self._channel.close()

    async def score(
        self, samples: Sequence[Sample], *, timeout_s: float = 0.0, request_id: str = ""
    ) -> ScoreResponse:
        request = ScoreRequest(samples=list(samples), request_id=request_id, timeout_s=timeout_s)
        if self.transport == "grpc":
            message = await self._grpc_call("Score", request_to_pb(request), timeout_s)
            return response_from_pb(message)
        data = await self._http_call("POST", "/v1/score", json=request.model_dump(mode="json"))
        return ScoreResponse.model_validate_json(data)

    async def info(self) -> GraderInfo:
        if self.transport == "grpc":
            return info_from_pb(await self._grpc_call("Info", pb.InfoRequest(), 0.0))
        return GraderInfo.model_validate_json(await self._http_call("GET", "/v1/info"))

    async def ready(self, timeout_s: float = 2.0) -> bool:
        """Whether the service says it serves (gRPC health / HTTP /readyz); never raises."""
        try:
            if self.transport == "grpc":
                assert self._channel is not None
                stub = health_pb2_grpc.HealthStub(self._channel)
                request = health_pb2.HealthCheckRequest(service="arbiter.v1.RewardService")
                reply = await stub.Check(request, timeout=timeout_s)
                return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
            assert self._http is not None
            response = await self._http.get("/readyz", timeout=timeout_s)
            return response.status_code == 200
        except (grpc.aio.AioRpcError, httpx.HTTPError):
            return False

    async def get_reward(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str]
    ) -> OpenRLHFResponse:
        """OpenRLHF's own endpoint, for checks that mirror what the trainer sees."""
        body = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
        return OpenRLHFResponse.model_validate_json(await self._http_call("POST", "/get_reward", json=body))

    async def _grpc_call(self, method: str, message: Any, timeout_s: float) -> Any:
        assert self._stub is not None
        call = getattr(self._stub, method)
        deadline = (timeout_s + 5.0) if timeout_s else self.timeout_s
        for attempt in range(self.retries + 1):
            try:
                return await call(message, timeout=deadline, metadata=self._metadata)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in _RETRYABLE_GRPC and attempt < self.retries:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise ArbiterClientError(exc.code().name, exc.details() or "") from exc
        raise AssertionError("unreachable")

    async def _http_call(self, method: str, path: str, json: Any = None) -> bytes:
        assert self._http is not None
        for attempt in range(self.retries + 1):
            try:
                response = await self._http.request(method, path, json=json)
            except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                if attempt < self.retries:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise ArbiterClientError("UNAVAILABLE", f"{type(exc).__name__}: {exc}") from exc
            if response.status_code >= 400:
                try:
                    error = response.json().get("error", {})
                    text = error.get("message") or response.text
                except ValueError:
                    text = response.text
                raise ArbiterClientError(str(response.status_code), text[:2000])
            return response.content
        raise AssertionError("unreachable")
