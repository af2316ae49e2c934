"""Episodes as an extension of a served grader (services/scoring/extension.py).

The final answers of episodes are graded by the serving engine itself (`engine.score`): the
service's graders, routing and recipes, its cache and deadlines. The sandboxed interpreters are
started on the first tool call, so a service whose episodes never run code starts none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from arbiter.contract import Result, Sample
from services.common.fleet import FleetScope
from services.episodes.environments import ENVIRONMENTS, EnvironmentContext
from services.episodes.interpreter import InterpreterPool
from services.episodes.manager import EpisodeManager
from services.episodes.nemo_gym.facade import NemoGymFacade
from services.episodes.nemo_gym.routes import nemo_gym_router
from services.episodes.routing import EpisodeRouter
from services.episodes.settings import EpisodeSettings
from services.episodes.transports import episode_grpc_handler, episode_router
from services.scoring.engine import ScoringEngine
from services.scoring.extension import ExtensionFactory


class EpisodesExtension:
    def __init__(
        self, engine: ScoringEngine, settings: EpisodeSettings, fleet: FleetScope | None = None
    ) -> None:
        self.engine = engine
        self.settings = settings
        self._pool: InterpreterPool | None = None
        context = EnvironmentContext(
            settings=settings, grade=self._grade, emergence=engine.emergence, interpreters=self.interpreters
        )
        self.manager = EpisodeManager(settings, ENVIRONMENTS, context, trajectory_keys=engine.emergence.keys)
        self.nemo_gym = NemoGymFacade(settings.nemo_gym, self.manager, self._grade, engine.failure_reward)
        self.router = EpisodeRouter(self.manager, fleet, settings.forward_timeout_s)

    def interpreters(self) -> InterpreterPool:
        if self._pool is None:
            self._pool = InterpreterPool(self.settings)
        return self._pool

    async def _grade(self, sample: Sample) -> Result:
        (result,) = await self.engine.score([sample])
        return result

    @property
    def routers(self) -> Sequence[Any]:
        routers = [episode_router(self.router)]
        if self.settings.nemo_gym.enabled:  # NeMo-Gym's resources-server routes (nemo_gym/)
            routers.append(nemo_gym_router(self.nemo_gym))
        return routers

    @property
    def grpc_handlers(self) -> Sequence[Any]:
        return [episode_grpc_handler(self.router)]

    async def start(self) -> None:
        await self.manager.start_reaper()

    async def stop(self) -> None:
        await self.nemo_gym.stop()
        await self.manager.stop()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await asyncio.to_thread(pool.close)


def episodes(settings: EpisodeSettings) -> ExtensionFactory:
    """The factory GraderServer takes (`extensions=[episodes(settings)]`)."""
    return lambda engine, fleet: EpisodesExtension(engine, settings, fleet)
