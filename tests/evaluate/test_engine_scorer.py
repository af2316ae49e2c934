"""The eval tool's in-process scorer: a big chunk never times out queueing behind itself.

Before, a whole chunk (and a window of them) entered the engine at once under one deadline, so
with a slow grader the samples at the back of the queue came back TIMEOUT (fallback rewards in
an eval set) although each batch took a fraction of the deadline.
"""

from __future__ import annotations

import asyncio

from services.common.contract import Sample, Status
from services.common.settings import KitSettings
from services.evaluate.scorers import EngineScorer
from tests.helpers import ScriptedGrader, server_settings


def test_each_grader_batch_gets_the_whole_deadline() -> None:
    grader = ScriptedGrader(batch_delay_s=0.05)
    server = server_settings(
        deadline_s=1.0, batch={"max_batch_size": 4, "max_concurrent_batches": 1, "max_wait_ms": 0}
    )
    settings = KitSettings.model_validate({"cache": {"backend": "none"}})
    scorer = EngineScorer(grader, server, settings)
    samples = [Sample(prompt="p", response=f"answer {i}") for i in range(160)]  # 40 batches, ~2 s

    async def run() -> list[Status]:
        await scorer.start()
        try:
            return [r.status for r in await scorer.score(samples)]
        finally:
            await scorer.stop()

    statuses = asyncio.run(run())
    assert statuses == [Status.OK] * 160
    assert max(grader.batches) <= 4
