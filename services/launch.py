"""Serving services in this process: what `arbiter serve` and `python -m services.<name>` share.

The CLI parses arguments and prints; the services start here, so a service's own entry point
(`python -m services.gateway`) never imports the command line that sits on top of it.

With `workers: N` (N > 1) this process supervises N worker processes instead, each serving all
the chosen services on the same ports (services/common/fleet.py says how their views merge):
one event loop per core, where a single process tops out at one core of HTTP handling. The
supervisor reserves the ports, starts the workers, restarts one that dies, and stops them all
on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arbiter.contract import GraderInfo
from services import catalog
from services.common.fleet import Fleet
from services.common.lifeline import die_with_parent
from services.common.logs import configure_logging
from services.settings_tree import ArbiterSettings, load

log = logging.getLogger(__name__)

READY = "ARBITER-WORKER-READY "  # a worker's stdout line once it serves, with what it serves
_STOP_GRACE_S = 30.0  # a worker drains in-flight requests (at most ~10 s) before it is killed
_RESTARTS = 5  # a worker dying this many times within _RESTART_WINDOW_S stops the whole service
_RESTART_WINDOW_S = 60.0


class UnknownServiceError(ValueError):
    """A service name this install does not have."""


@dataclass(frozen=True)
class Served:
    """A started service, as `announce` reports it."""

    name: str
    info: GraderInfo
    http_url: str
    grpc_target: str


Announce = Callable[[Sequence[Served]], None]


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


def worker_count(settings: ArbiterSettings) -> int:
    return settings.workers or os.cpu_count() or 1


async def serve(
    settings: ArbiterSettings,
    names: Sequence[str],
    host: str | None = None,
    announce: Announce | None = None,
) -> None:
    """Start `names` (already in start order) until SIGINT/SIGTERM: in this process, or in
    `settings.workers` worker processes on the same ports."""
    if host:
        for name in names:
            catalog.service(name).server_settings(settings).host = host
    if worker_count(settings) > 1:
        await _supervise(settings, names, worker_count(settings), announce)
    else:
        await _serve_here(settings, names, announce)


async def _serve_here(
    settings: ArbiterSettings, names: Sequence[str], announce: Announce | None, fleet: Fleet | None = None
) -> None:
    from services.transports.server import GraderServer, run_until_signalled  # gRPC loads only to serve

    servers: list[GraderServer] = []
    for name in names:
        peers = {s.name: s.engine for s in servers}
        servers.append(catalog.make_server(name, settings, peers, fleet))

    def started() -> None:
        _settle_gc()
        if announce is not None:
            announce([Served(s.name, s.engine.info, s.http_url, s.grpc_target) for s in servers])

    await run_until_signalled(servers, started)


def _settle_gc() -> None:
    """Once the services are up: what start-up built (modules, graders, pools, settings) is frozen
    out of the collector's scans, and the youngest generation collects less often. Per-sample
    work allocates briskly; full collections re-scanning every start-up object were a sixth of
    the judge's CPU per sample."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


# --- the supervisor ----------------------------------------------------------------------------


def _reserve_ports(settings: ArbiterSettings, names: Sequence[str]) -> list[socket.socket]:
    """Bind every port the workers will share, before any starts: port 0 becomes a fixed free port
    they all use, and a port another program holds fails here, once. The reserving sockets never
    listen, so the kernel hands them no connections; they only hold the ports while we run."""
    from services.transports.server import bind

    held: list[socket.socket] = []
    try:
        for name in names:
            server = catalog.service(name).server_settings(settings)
            held.append(bind(server.host, server.http_port, reuse_port=True))
            server.http_port = held[-1].getsockname()[1]
            if server.grpc_port >= 0:
                held.append(bind(server.host, server.grpc_port, reuse_port=True))
                server.grpc_port = held[-1].getsockname()[1]
    except OSError:
        for sock in held:
            sock.close()
        raise
    return held


async def _echo(stream: asyncio.StreamReader) -> None:
    """A worker's stdout after it is ready, passed on (a pipe nobody reads would block it)."""
    async for line in stream:
        sys.stdout.write(line.decode("utf-8", "replace"))


class _Worker:
    """One worker process: started, watched, restarted by the supervisor."""

    def __init__(self, index: int, argv: list[str]) -> None:
        self.index = index
        self.argv = argv
        self.proc: asyncio.subprocess.Process | None = None
        self.deaths: list[float] = []
        self._echo: asyncio.Future[None] | None = None

    async def start(self) -> list[dict[str, Any]]:
        """Start the process; what it serves once it says it is ready (OSError if it exits first)."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
        )
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace")
            if line.startswith(READY):
                served: list[dict[str, Any]] = json.loads(line[len(READY) :])
                self._echo = asyncio.ensure_future(_echo(self.proc.stdout))
                return served
            sys.stdout.write(line)  # anything else it prints goes where ours goes
        code = await self.proc.wait()
        raise OSError(f"worker {self.index} exited with {code} before it served (its log is above)")

    async def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), _STOP_GRACE_S)
        except TimeoutError:
            log.warning("worker %d did not stop in %.0f s: killed", self.index, _STOP_GRACE_S)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


async def _supervise(
    settings: ArbiterSettings, names: Sequence[str], count: int, announce: Announce | None
) -> None:
    from services.transports.server import stop_on_signals

    held = _reserve_ports(settings, names)
    rundir = Path(tempfile.mkdtemp(prefix="arbiter-workers-"))
    try:
        settings_file = rundir / "settings.json"
        settings_file.write_text(catalog.per_worker(settings, count).model_dump_json())
        settings_file.chmod(0o600)  # may name files and hosts; tokens stay in the environment
        workers = [
            _Worker(
                i,
                [
                    sys.executable,
                    "-m",
                    "services.launch",
                    "--worker",
                    str(i),
                    "--of",
                    str(count),
                    "--rundir",
                    str(rundir),
                    "--settings",
                    str(settings_file),
                    "--supervisor",
                    str(os.getpid()),
                    *names,
                ],
            )
            for i in range(count)
        ]
        stop = stop_on_signals()
        try:
            served = await asyncio.gather(*(w.start() for w in workers))
            log.info("%d workers serving %s", count, ", ".join(names))
            if announce is not None:
                announce(
                    [
                        Served(
                            s["name"], GraderInfo.model_validate(s["info"]), s["http_url"], s["grpc_target"]
                        )
                        for s in served[0]
                    ]
                )
            await _watch(workers, stop)
        finally:
            await asyncio.gather(*(w.stop() for w in workers))
    finally:
        for sock in held:
            sock.close()
        shutil.rmtree(rundir, ignore_errors=True)


async def _watch(workers: list[_Worker], stop: asyncio.Event) -> None:
    """Until `stop`: a worker that dies is started again (its siblings serve meanwhile); one that
    keeps dying stops the whole service rather than flapping forever."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while True:
            exits = {asyncio.ensure_future(w.proc.wait()): w for w in workers if w.proc is not None}
            done, _ = await asyncio.wait({stopping, *exits}, return_when=asyncio.FIRST_COMPLETED)
            for pending in exits:
                pending.cancel()
            if stopping in done:
                return
            for finished in done:
                worker = exits[finished]
                now = time.monotonic()
                worker.deaths = [t for t in worker.deaths if now - t < _RESTART_WINDOW_S] + [now]
                log.error("worker %d exited with %s: restarting it", worker.index, finished.result())
                if len(worker.deaths) >= _RESTARTS:
                    raise OSError(
                        f"worker {worker.index} died {_RESTARTS} times within {_RESTART_WINDOW_S:.0f} s"
                    )
                await asyncio.sleep(min(1.0, 0.1 * len(worker.deaths)))
                await worker.start()
    finally:
        stopping.cancel()


# --- a worker ----------------------------------------------------------------------------------


def _worker_main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m services.launch")
    parser.add_argument("--worker", type=int, required=True)
    parser.add_argument("--of", type=int, required=True)
    parser.add_argument("--rundir", required=True)
    parser.add_argument("--settings", required=True)
    parser.add_argument("--supervisor", type=int, required=True)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    die_with_parent(args.supervisor)  # SIGTERM when the supervisor goes, even by SIGKILL
    settings = ArbiterSettings.model_validate(json.loads(Path(args.settings).read_text()))
    configure_logging(settings.log.level, settings.log.json_format)
    fleet = Fleet(args.rundir, args.worker, args.of)

    def ready(served: Sequence[Served]) -> None:
        print(
            READY + json.dumps([{**asdict(s), "info": s.info.model_dump(mode="json")} for s in served]),
            flush=True,
        )

    async def work() -> None:
        await fleet.start()
        try:
            await _serve_here(settings, args.names, ready, fleet)
        finally:
            await fleet.stop()

    run(work())


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run on uvloop when it is installed (uvicorn[standard] brings it), else asyncio."""
    with contextlib.suppress(ImportError):
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


def main(name: str) -> None:
    """`python -m services.<name>`: one service, settings from env and ARBITER_CONFIG."""
    from services.transports.auth import AuthConfigError

    try:
        settings = load()
    except ValueError as exc:  # SettingsError names each bad field
        raise SystemExit(f"invalid settings: {exc}") from exc
    configure_logging(settings.log.level, settings.log.json_format)
    try:
        run(serve(settings, [name]))  # the server logs where it listens
    except (OSError, AuthConfigError) as exc:
        raise SystemExit(f"{name} cannot start: {exc}") from exc


if __name__ == "__main__":
    _worker_main(sys.argv[1:])
