"""Where a component's grader runs: in this process, or on replicas reached over gRPC.

Remote replicas are load balanced round-robin; a replica that fails a call or a health
check `eject_after_failures` times in a row sits out `eject_cooldown_s`, and a failed
call is retried on the next replica while the deadline allows. A `dns:///name:port`
target is one channel over every address the name resolves to (compose `--scale`, a
headless Kubernetes Service), so a failed call on it is retried on that same channel too:
its round-robin policy has already moved off the dead address.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Sequence
from typing import Protocol

from arbiter.client import ArbiterClient, ArbiterClientError
from arbiter.contract import GraderInfo, Result, Sample
from arbiter.tls import ClientTLS
from services.scoring.engine import ScoringEngine

log = logging.getLogger(__name__)


class BackendError(Exception):
    """No replica could score the batch in time."""


class Backend(Protocol):
    name: str

    async def start(self) -> None: ...

    async def info(self) -> GraderInfo | None: ...

    async def score(self, samples: Sequence[Sample], timeout_s: float) -> list[Result]: ...

    async def aclose(self) -> None: ...


class InProcessBackend:
    """A service's grader in this process (`arbiter serve`): no network hop, no second pass through
    the kit (its engine lends the grader, its failure isolation and deadline handling)."""

    def __init__(self, name: str, engine: ScoringEngine, owned: bool = False) -> None:
        self.name = name
        self.engine = engine
        self._owned = owned  # built for the gateway alone, so the gateway starts and stops it

    async def start(self) -> None:
        if self._owned:
            await self.engine.start()

    async def info(self) -> GraderInfo | None:
        return self.engine.info

    async def score(self, samples: Sequence[Sample], timeout_s: float) -> list[Result]:
        # Straight to the grader: the gateway's own engine has already looked up the cache,
        # deduplicated, batched and will attach the logs (one pass through the kit, not two).
        return await self.engine.grade(samples, timeout_s)

    async def aclose(self) -> None:
        if self._owned:
            await self.engine.stop()


class _Replica:
    def __init__(self, target: str, token: str | None, tls: ClientTLS | None = None) -> None:
        self.target = target
        self._token = token
        self._tls = tls
        self._client: ArbiterClient | None = None
        self.failures = 0
        self.ejected_until = 0.0

    @property
    def client(self) -> ArbiterClient:
        # Made on first use: a grpc.aio channel belongs to the event loop it was made in,
        # and the gateway is built before `arbiter serve` starts its loop.
        if self._client is None:
            self._client = ArbiterClient(grpc_target=self.target, retries=0, token=self._token, tls=self._tls)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    @property
    def available(self) -> bool:
        return time.monotonic() >= self.ejected_until


class RemoteBackend:
    # Extra tries of a failed call on a `dns:///` target: a replica killed mid-burst fails the
    # calls it held; the retries land on the addresses still alive behind the same name.
    DNS_RETRIES = 3

    def __init__(
        self,
        name: str,
        targets: Sequence[str],
        health_interval_s: float = 2.0,
        eject_after_failures: int = 2,
        eject_cooldown_s: float = 10.0,
        token: str | None = None,
        tls: ClientTLS | None = None,
    ) -> None:
        if not targets:
            raise ValueError(f"service {name!r} has no replicas")
        self.name = name
        self.replicas = [_Replica(t, token, tls) for t in targets]
        self._turn = itertools.cycle(range(len(self.replicas)))
        self._health_interval = health_interval_s
        self._eject_after = eject_after_failures
        self._cooldown = eject_cooldown_s
        self._health_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._health_task = asyncio.create_task(self._watch_health(), name=f"health-{self.name}")

    async def info(self) -> GraderInfo | None:
        for replica in self.replicas:
            try:
                return await asyncio.wait_for(replica.client.info(), 5.0)
            except (ArbiterClientError, TimeoutError) as exc:
                log.warning("%s: no Info from %s (%s)", self.name, replica.target, exc)
        return None

    def _order(self) -> list[_Replica]:
        start = next(self._turn)
        rotated = self.replicas[start:] + self.replicas[:start]
        available = [r for r in rotated if r.available]
        return available or rotated  # all ejected: try them anyway rather than fail without trying

    def _failed(self, replica: _Replica, why: str) -> None:
        replica.failures += 1
        if replica.failures >= self._eject_after and replica.available:
            replica.ejected_until = time.monotonic() + self._cooldown
            log.warning("%s: ejecting %s for %.0fs (%s)", self.name, replica.target, self._cooldown, why)

    def _attempts(self) -> list[_Replica]:
        """Replicas to try in order: each once, then `dns:///` targets again (other addresses)."""
        order = self._order()
        again = [r for r in order if r.target.startswith("dns:")]
        return order + again * self.DNS_RETRIES

    async def score(self, samples: Sequence[Sample], timeout_s: float) -> list[Result]:
        deadline = time.monotonic() + timeout_s
        errors: list[str] = []
        for attempt, replica in enumerate(self._attempts()):
            if attempt >= len(self.replicas):  # a retry on a DNS channel: let it see the dead address go
                await asyncio.sleep(0.05 * attempt)
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                break
            try:
                reply = await asyncio.wait_for(replica.client.score(samples, timeout_s=remaining), remaining)
            except ArbiterClientError as exc:
                if exc.code in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"):
                    raise BackendError(f"{self.name} refused the batch: {exc}") from exc
                errors.append(f"{replica.target}: {exc.code}")
                self._failed(replica, exc.code)
                continue
            except TimeoutError:
                errors.append(f"{replica.target}: timeout")
                self._failed(replica, "timeout")
                continue
            replica.failures = 0
            return reply.results
        raise BackendError(f"{self.name}: no replica answered ({'; '.join(errors) or 'deadline passed'})")

    async def _watch_health(self) -> None:
        while True:
            for replica in self.replicas:
                if await replica.client.ready(timeout_s=1.0):
                    if not replica.available:
                        log.info("%s: %s is healthy again", self.name, replica.target)
                    replica.failures = 0
                    replica.ejected_until = 0.0
                else:
                    self._failed(replica, "health check failed")
            await asyncio.sleep(self._health_interval)

    async def aclose(self) -> None:
        if self._health_task is not None:
            self._health_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._health_task
        await asyncio.gather(*(r.aclose() for r in self.replicas))
