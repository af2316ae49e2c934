"""Sibling worker processes serving the same ports, and the one view they give of themselves.

With `workers: N`, N processes serve the same HTTP and gRPC ports (SO_REUSEPORT: the kernel
spreads connections across them), each with its own engine (batcher, cache, grader). A scrape
of /metrics or a read of the gateway's /v1/stats lands on one of them at random; alone, it
would describe a random 1/N of the traffic. So each worker also answers its siblings on a
unix socket of its own (`<rundir>/<index>.sock`), and a view asked of any worker gathers
every worker's part and merges them: counters, histograms and gauges summed, windows joined.

The socket protocol is one line (the view's name) in, the raw part out, then EOF. A sibling
that does not answer in time (restarting, wedged) is left out, and the reply says how many
workers it covers, so a partial view is never mistaken for the whole.

The same sockets carry work a worker hands to the sibling that owns it (`serve` / `call`):
the name's line, then the payload up to EOF, in; the answer, then EOF, out. Episodes use it:
an episode lives in one worker, and a call that the kernel gave to another worker is forwarded
there rather than answered "lost".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)

View = Callable[[], bytes]
Call = Callable[[bytes], Awaitable[bytes]]  # a payload in, an answer out
WORKERS_HEADER = "x-arbiter-workers"  # "answered/size" on a merged view
_MAX_NAME = 256
_READ_TIMEOUT_S = 30.0
_MAX_PART = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Gathered:
    """Every worker's part of one view (this worker's first) and how many of `size` answered."""

    parts: list[bytes]
    size: int

    @property
    def coverage(self) -> str:
        return f"{len(self.parts)}/{self.size}"


class Fleet:
    """This process's place among its siblings: it answers them, and gathers from them."""

    def __init__(self, rundir: str | Path, index: int, size: int, timeout_s: float = 2.0) -> None:
        self.rundir = Path(rundir)
        self.index = index
        self.size = size
        self.timeout_s = timeout_s
        self._views: dict[str, View] = {}
        self._calls: dict[str, Call] = {}
        self._server: asyncio.AbstractServer | None = None

    def scoped(self, service: str) -> FleetScope:
        """The views of one service among those this process serves."""
        return FleetScope(self, service)

    def socket_path(self, index: int) -> Path:
        return self.rundir / f"{index}.sock"

    def provide(self, name: str, view: View) -> None:
        """Answer `name` (e.g. "gateway/metrics") with `view()`: this worker's raw part."""
        self._views[name] = view

    def serve(self, name: str, call: Call) -> None:
        """Answer `name` with `await call(payload)`: work a sibling forwards to this worker."""
        self._calls[name] = call

    async def start(self) -> None:
        path = self.socket_path(self.index)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a socket left by this index's previous process (it was restarted)
        self._server = await asyncio.start_unix_server(self._answer, path=str(path))
        os.chmod(path, 0o600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path(self.index).unlink()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Siblings send at once; the bound only drops a wedged one. It is generous because a busy
        # event loop (interpreters starting, a burst) can take seconds to get to this read.
        read_timeout_s = max(self.timeout_s, _READ_TIMEOUT_S)
        try:
            line = await asyncio.wait_for(reader.readline(), read_timeout_s)
            name = line[:_MAX_NAME].decode("utf-8", "replace").strip()
            view, call = self._views.get(name), self._calls.get(name)
            if call is not None:
                payload = await asyncio.wait_for(_read_to_eof(reader), read_timeout_s)
                writer.write(await call(payload))
            elif view is not None:
                writer.write(view())
            await writer.drain()
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            log.warning("a sibling's request went unanswered: %r", exc)
        except Exception:
            log.exception("answering a sibling's request failed")
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def gather(self, name: str) -> Gathered:
        """`name`'s part from every worker that answers within the timeout, this one's first."""
        own = self._views[name]()
        others = [i for i in range(self.size) if i != self.index]
        parts = await asyncio.gather(*(self._ask(i, name) for i in others))
        return Gathered([own, *(p for p in parts if p is not None)], self.size)

    async def call(self, index: int, name: str, payload: bytes, timeout_s: float) -> bytes | None:
        """Worker `index`'s answer to `name` with `payload`; None if it gave none in time."""
        return await self._ask(index, name, payload, timeout_s)

    async def _ask(
        self, index: int, name: str, payload: bytes | None = None, timeout_s: float | None = None
    ) -> bytes | None:
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(timeout_s or self.timeout_s):
                reader, writer = await asyncio.open_unix_connection(str(self.socket_path(index)))
                writer.write(name.encode() + b"\n")
                if payload is not None:
                    writer.write(payload)
                    writer.write_eof()
                await writer.drain()
                part = await _read_to_eof(reader)
        except (OSError, TimeoutError) as exc:
            log.warning("worker %d gave no %s (%s)", index, name, exc)
            return None
        finally:
            if writer is not None:
                writer.close()
        return part or None


async def _read_to_eof(reader: asyncio.StreamReader) -> bytes:
    """A sibling's whole part (a read returns what has arrived so far, not the whole reply), at
    most _MAX_PART bytes."""
    chunks: list[bytes] = []
    size = 0
    while size <= _MAX_PART and (chunk := await reader.read(1 << 20)):
        chunks.append(chunk)
        size += len(chunk)
    if size > _MAX_PART:
        raise OSError(f"a part over {_MAX_PART} bytes")
    return b"".join(chunks)


@dataclass(frozen=True, slots=True)
class FleetScope:
    """One service's views: `provide("metrics", ...)` answers siblings' "gateway/metrics"."""

    fleet: Fleet
    service: str

    @property
    def index(self) -> int:
        return self.fleet.index

    @property
    def size(self) -> int:
        return self.fleet.size

    def provide(self, view: str, answer: View) -> None:
        self.fleet.provide(f"{self.service}/{view}", answer)

    def serve(self, name: str, call: Call) -> None:
        self.fleet.serve(f"{self.service}/{name}", call)

    async def call(self, index: int, name: str, payload: bytes, timeout_s: float) -> bytes | None:
        return await self.fleet.call(index, f"{self.service}/{name}", payload, timeout_s)

    async def gather(self, view: str) -> Gathered:
        return await self.fleet.gather(f"{self.service}/{view}")


def merge_metrics(parts: Iterable[bytes]) -> bytes:
    """Prometheus text expositions of sibling workers as one: each sample summed across workers
    (counters, histogram buckets, sums and counts, and gauges such as requests in flight or queue
    depth, which add up); a `_created` timestamp is the earliest."""
    families: dict[str, Metric] = {}
    values: dict[tuple[str, str, tuple[tuple[str, str], ...]], float] = {}
    for part in parts:
        for family in text_string_to_metric_families(part.decode("utf-8")):
            known = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            for sample in family.samples:
                key = (known.name, sample.name, tuple(sorted(sample.labels.items())))
                if sample.name.endswith("_created"):
                    values[key] = min(values.get(key, sample.value), sample.value)
                else:
                    values[key] = values.get(key, 0.0) + sample.value
    for (family_name, sample_name, labels), value in values.items():
        families[family_name].add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


class _Fixed:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families
