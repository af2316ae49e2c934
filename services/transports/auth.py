"""Optional bearer-token auth, the same on HTTP and gRPC.

Off by default (services bind 127.0.0.1). When a service's `auth_token_env` names an
environment variable, every endpoint but the health probes requires `Authorization:
Bearer <token>` (gRPC: the `authorization` metadata). The token never sits in a config file.
A service's own routes for clients that send no header (`PathTokenRouter`) may take it as the
path's last segment instead.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc
from fastapi import APIRouter

OPEN_HTTP_PATHS = frozenset({"/healthz", "/readyz"})
PROTECTED_GRPC_PREFIX = "/arbiter.v1.RewardService/"  # health and reflection stay open


class AuthConfigError(ValueError):
    pass


def load_token(env_name: str) -> str | None:
    """The token from the named variable; None when auth is off; an error when it is named but empty."""
    if not env_name:
        return None
    token = os.environ.get(env_name, "").strip()
    if not token:
        raise AuthConfigError(
            f"auth_token_env names {env_name}, but that environment variable is empty or unset"
        )
    return token


def authorized(header: str | None, token: str) -> bool:
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), token.encode())


def authorized_path(path: str, prefixes: Iterable[str], token: str) -> bool:
    """A path carrying the token as its last segment under one of `prefixes` (`/run_code/<token>`):
    for routes whose clients cannot send a header (veRL's SandboxFusion client sends none)."""
    for prefix in prefixes:
        if path.startswith(prefix):
            presented = path[len(prefix) :]
            return "/" not in presented and hmac.compare_digest(presented.encode(), token.encode())
    return False


class PathTokenRouter(APIRouter):
    """An APIRouter whose routes under `token_prefix` take the service's token in the path
    (`<token_prefix><token>`) instead of the Authorization header; its other routes, as every route
    of the service, take the header."""

    def __init__(self, token_prefix: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.token_prefix = token_prefix


class GrpcAuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        self._token = token

        async def deny(request: Any, context: grpc.aio.ServicerContext) -> None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if details.method.startswith(PROTECTED_GRPC_PREFIX):
            metadata = dict(details.invocation_metadata or ())
            if not authorized(metadata.get("authorization"), self._token):
                return self._deny
        return await continuation(details)
