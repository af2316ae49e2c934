"""The eval tool's in-process scorer: a big chunk never times out queueing behind itself.

Before, a whole chunk (and a window of them) entered the engine at once under one deadline, so
with a slow grader the samples at the back of the queue came back TIMEOUT (fallback rewards in
an eval set) although each batch took a fraction of the deadline.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from arbiter.contract import Sample, Status
from services.common.settings import KitSettings
from services.evaluate.scorers import EngineScorer
from services.scoring.cache import NullCache
from services.scoring.engine import ScoringEngine
from tests.evaluate.rows import math_rows, write_jsonl
from tests.helpers import ScriptedGrader, server_settings


def test_each_grader_batch_gets_the_whole_deadline() -> None:
    grader = ScriptedGrader(batch_delay_s=0.05)
    server = server_settings(
        deadline_s=1.0, batch={"max_batch_size": 4, "max_concurrent_batches": 1, "max_wait_ms": 0}
    )
    settings = KitSettings.model_validate({"cache": {"backend": "none"}})
    scorer = EngineScorer(ScoringEngine(grader, server, NullCache(), settings.emergence), settings.emergence)
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


def test_emergence_computed_beside_the_grader_equals_the_engines_own() -> None:
    from services.scoring.cache import make_cache
    from services.scoring.engine import ScoringEngine
    from tests.helpers import rules_grader

    settings = KitSettings.model_validate({"cache": {"backend": "none"}})
    responses = [
        "<think>Wait, let me reconsider. Actually 6*7=42.</think> \\boxed{42}</s>",
        "<answer>7</answer> double-check: wait wait",
        "no tags at all " * 50,
        "loop " * 20_000 + "<think>" * 3,  # over the size the engine scans off the loop
        "",
    ]
    samples = [
        Sample(prompt="p", response=r, label="42", metadata={"finish_reason": "length"} if i == 1 else {})
        for i, r in enumerate(responses)
    ]

    async def both() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        scorer = EngineScorer(
            ScoringEngine(rules_grader(), server_settings(), make_cache(settings.cache), settings.emergence),
            settings.emergence,
        )
        engine = ScoringEngine(
            rules_grader(), server_settings(), make_cache(settings.cache), settings.emergence
        )
        await scorer.start()
        await engine.start()
        try:
            ours = [r.model_dump(mode="json") for r in await scorer.score(samples)]
            theirs = [r.model_dump(mode="json") for r in await engine.score(samples)]
        finally:
            await scorer.stop()
            await engine.stop()
        return ours, theirs

    ours, theirs = asyncio.run(both())
    assert ours == theirs
    assert [list(r["logs"]) for r in ours] == [list(r["logs"]) for r in theirs]  # same keys, same order
    assert ours[0]["logs"]["reflect/any"] == 1.0 and ours[3]["logs"]["response/words"] > 10_000


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_killed_run_leaves_no_emergence_worker_behind(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(3000))
    out = tmp_path / "killed-run-marker.jsonl"
    args = [sys.executable, "-m", "services.cli", "score", str(source), "-o", str(out), "--grader", "math"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and not (out.exists() and out.stat().st_size > 0):
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed; use a larger input"
    assert len(_processes_mentioning(out.name)) >= 2  # the run and its emergence worker
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(250):
        if not _processes_mentioning(out.name):
            break
        time.sleep(0.02)
    assert _processes_mentioning(out.name) == []
