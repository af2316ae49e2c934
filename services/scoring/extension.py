"""A stateful part a served grader can carry beside its stateless scoring (e.g. episodes).

The kit stays unaware of what an extension does: `GraderServer` builds it over its engine, serves
its HTTP routes and gRPC services beside the kit's own (same auth, limits and ports), starts it
after the engine and stops it before the engine, so whatever it holds (sandboxes, sessions) is
freed on shutdown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from services.common.fleet import FleetScope
    from services.scoring.engine import ScoringEngine


class ServerExtension(Protocol):
    @property
    def routers(self) -> Sequence[Any]:
        """FastAPI APIRouters served beside the kit's routes."""
        ...

    @property
    def grpc_handlers(self) -> Sequence[Any]:
        """grpc.GenericRpcHandler objects served beside arbiter.v1.RewardService."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


# Built over the engine, with the sibling workers on the same ports (None: a single process).
ExtensionFactory = Callable[["ScoringEngine", "FleetScope | None"], ServerExtension]
