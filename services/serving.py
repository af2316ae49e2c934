"""Serving services in this process: what `arbiter serve` and `python -m services.<name>` share.

The CLI parses arguments and prints; the services start here, so a service's own entry point
(`python -m services.gateway`) never imports the command line that sits on top of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from services import catalog
from services.common.logs import configure_logging
from services.settings import ArbiterSettings, load


class UnknownServiceError(ValueError):
    """A service name this install does not have."""


def runnable(settings: ArbiterSettings, names: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The services to start, in start order, and those left out of "all" with why.

    Asked for by name, a service always starts; asked for all (`names` empty), those these
    settings cannot run (reward_rm without a checkpoint) are left out.
    """
    skipped: dict[str, str] = {}
    chosen = list(names or catalog.SERVICES)
    unknown = [n for n in chosen if n not in catalog.SERVICES]
    if unknown:
        raise UnknownServiceError(
            f"unknown service(s): {', '.join(unknown)}; available: {', '.join(catalog.SERVICES)}"
        )
    if not names:
        for name in list(chosen):
            reason = catalog.service(name).not_ready(settings)
            if reason:
                chosen.remove(name)
                skipped[name] = reason
    return catalog.start_order(chosen), skipped


async def serve(
    settings: ArbiterSettings,
    names: Sequence[str],
    host: str | None = None,
    announce: Callable[[Sequence[Any]], None] | None = None,
) -> None:
    """Start `names` (already in start order) in this process until SIGINT/SIGTERM."""
    from services.common.server import GraderServer, run_until_signalled  # gRPC loads only to serve

    if host:
        for name in names:
            catalog.service(name).server_settings(settings).host = host
    servers: list[GraderServer] = []
    for name in names:
        peers = {s.name: s.engine for s in servers}
        servers.append(catalog.make_server(name, settings, peers))
    await run_until_signalled(servers, (lambda: announce(servers)) if announce else None)


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run on uvloop when it is installed (uvicorn[standard] brings it), else asyncio."""
    with contextlib.suppress(ImportError):
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


def main(name: str) -> None:
    """`python -m services.<name>`: one service, settings from env and ARBITER_CONFIG."""
    from services.common.auth import AuthConfigError

    try:
        settings = load()
    except ValueError as exc:  # SettingsError names each bad field
        raise SystemExit(f"invalid settings: {exc}") from exc
    configure_logging(settings.log.level, settings.log.json_format)
    try:
        run(serve(settings, [name]))  # the server logs where it listens
    except (OSError, AuthConfigError) as exc:
        raise SystemExit(f"{name} cannot start: {exc}") from exc
