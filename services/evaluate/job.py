"""One `arbiter score` run end to end: score (here, on a deployment or on Ray), then summarize."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from services.evaluate.passk import Aggregate
from services.evaluate.runner import RunOutcome, RunPlan, check_score_files, run, run_scorer
from services.evaluate.scorers import EngineScorer, RemoteScorer
from services.evaluate.summary import summarize, write_outputs
from services.evaluate.tables import print_summary
from services.settings_tree import ArbiterSettings


@dataclass(frozen=True)
class ScoreSource:
    """Where results come from: in-process (default), `url`, or Ray (`ray` / `ray_address`)."""

    grader: str = "reward_rules"
    url: str | None = None
    ray: bool = False
    ray_address: str | None = None
    ray_actors: int | None = None
    ray_cpus: int | None = None


async def _done() -> None:
    return None


async def _score(
    plan: RunPlan,
    source: ScoreSource,
    settings: ArbiterSettings,
    console: Console | None,
    tally: Aggregate | None = None,
) -> tuple[RunOutcome, Awaitable[None]]:
    """The run's outcome, and the scorer's shutdown still in progress (await it)."""
    if source.url:
        return await run_scorer(plan, RemoteScorer(source.url), console, source=source.url, tally=tally)
    if source.ray or source.ray_address:
        from services.evaluate.ray_runner import RayScorer

        ray_scorer = RayScorer(
            source.grader,
            settings.model_dump_json(),
            plan.columns,
            address=source.ray_address,
            actors=source.ray_actors,
            num_cpus=source.ray_cpus,
        )
        try:
            info = await ray_scorer.start()
            ray_plan = RunPlan(**{**plan.__dict__, "window": ray_scorer.window})
            return await run(ray_plan, info, ray_scorer.chunk_scorer(), "ray", console, tally), _done()
        finally:
            ray_scorer.stop()
    from services import catalog

    engine = catalog.named_engine(source.grader, settings)
    return await run_scorer(plan, EngineScorer(engine, settings.emergence), console, tally=tally)


async def score_job(
    plan: RunPlan,
    source: ScoreSource,
    settings: ArbiterSettings,
    console: Console | None,
    ks: Sequence[int] | None = None,
    threshold: float = 0.5,
    summary_path: Path | None = None,
    report_path: Path | None = None,
) -> dict[str, Any]:
    check_score_files(plan, summary_path, report_path)  # before any work: refuse what may not be written
    # The summary's numbers gather while rows are written: no second pass over the output.
    outcome, stopping = await _score(plan, source, settings, console, Aggregate(plan.columns, threshold))
    try:  # in a thread: the grader's shutdown (pools, sandboxes) overlaps the summary
        summary, agg = await asyncio.to_thread(summarize, plan, outcome, ks, threshold)
        await asyncio.to_thread(write_outputs, summary, agg, summary_path, report_path)
    finally:
        await stopping
    if console is not None:
        print_summary(summary, console)
        written = [str(p) for p in (summary_path, report_path) if p is not None]
        if written:
            console.print("wrote " + ", ".join(written))
    return summary
