"""Score on Ray: shards of rows go to actors that each hold a started grader (in the workers).

The driver keeps the in-process writer: shards come back in any order but are written in input
order, so the output, the resume rule and the manifest are exactly those of an in-process run.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from arbiter.contract import GraderInfo
from services.evaluate.columns import ColumnMap
from services.evaluate.readers import InputRow
from services.evaluate.runner import ChunkScorer


class ShardScorer:
    """Ray actor body: builds the named grader from the settings once, then scores shards."""

    def __init__(self, grader_name: str, settings_json: str) -> None:
        self.grader_name = grader_name
        self.settings_json = settings_json
        self._scorer: Any = None
        self._lock = asyncio.Lock()

    async def _ready(self) -> Any:
        async with self._lock:
            if self._scorer is None:
                from services import catalog
                from services.evaluate.scorers import EngineScorer
                from services.settings_tree import ArbiterSettings

                settings = ArbiterSettings.model_validate_json(self.settings_json)
                engine = catalog.named_engine(self.grader_name, settings)
                scorer = EngineScorer(engine, settings.emergence, emergence_worker=False)
                await scorer.start()
                self._scorer = scorer
        return self._scorer

    async def info(self) -> dict[str, Any]:
        scorer = await self._ready()
        return dict(scorer.info.model_dump(mode="json"))

    async def score(self, rows: list[InputRow], columns: ColumnMap) -> list[dict[str, Any]]:
        from services.evaluate.runner import score_rows

        return await score_rows(await self._ready(), rows, columns)


class RayScorer:
    """Connects to (or starts) Ray and spreads shards over `actors` ShardScorer actors."""

    def __init__(
        self,
        grader_name: str,
        settings_json: str,
        columns: ColumnMap,
        address: str | None = None,
        actors: int | None = None,
        num_cpus: int | None = None,
    ) -> None:
        import ray

        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        count = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote: Any = ray.remote(num_cpus=1)(ShardScorer)
        self.actors: list[Any] = [remote.remote(grader_name, settings_json) for _ in range(count)]
        self.columns = columns
        self._next = itertools.cycle(self.actors)
        self._info: GraderInfo | None = None

    @property
    def window(self) -> int:
        return 2 * len(self.actors)  # each actor has one shard running and one queued

    async def start(self) -> GraderInfo:
        infos = await asyncio.gather(*(actor.info.remote() for actor in self.actors))
        hashes = {info["config_hash"] for info in infos}
        if len(hashes) != 1:
            raise RuntimeError(f"Ray workers built different graders (config hashes {sorted(hashes)})")
        self._info = GraderInfo.model_validate(infos[0])
        return self._info

    def chunk_scorer(self) -> ChunkScorer:
        async def score(rows: list[InputRow]) -> list[dict[str, Any]]:
            records: list[dict[str, Any]] = await next(self._next).score.remote(rows, self.columns)
            return records

        return score

    def stop(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor)
