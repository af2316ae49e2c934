"""`arbiter score --prompt-id-key` over a group-aware gateway recipe: whole groups in one call.

Chunks and grader batches smaller than the groups would cut them; the runner keeps a prompt's
adjacent rows together, so each group's terms are computed at once (a hold of 0 s would show
any group that was not: its members would come back `group/incomplete`).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from services import catalog
from services.evaluate.columns import ColumnMap
from services.evaluate.readers import InputRow
from services.evaluate.runner import _chunks, score_rows
from services.evaluate.scorers import EngineScorer
from services.settings_tree import ArbiterSettings
from tests.gateway import group_reference as ref


def test_prompt_id_groups_are_scored_whole() -> None:
    rng = random.Random(31)
    sizes = (3, 1, 5, 16, 2, 7)
    cases = [ref.generate(rng, size, f"eval-{i}", "mixed") for i, size in enumerate(sizes)]
    rows = [
        InputRow(
            index=n,
            number=n + 1,
            where=f"line {n + 1}",
            value={"id": f"p{i}", "prompt": case.prompt, "response": r, "label": ref.label("kimi_length", 8)},
        )
        for n, (i, case, r) in enumerate((i, c, r) for i, c in enumerate(cases) for r in c.responses)
    ]
    settings = ArbiterSettings.model_validate(
        {
            "gateway": {
                "group_hold_s": 0.001,
                "batch": {"max_batch_size": 4},
                "recipes": {
                    "default": {"components": {"math": {"grader": "math"}}},
                    **ref.recipes(("kimi_length",), (8,)),
                },
            },
            "cache": {"backend": "none"},
        }
    )
    columns = ColumnMap(prompt_id="id")
    chunks = list(_chunks(iter(rows), 4, "id"))
    assert [len(c) for c in chunks] == [4, 5, 16, 9]  # never a group cut: 3+1, 5, 16, 2+7
    scorer = EngineScorer(
        catalog.named_engine("gateway", settings), settings.emergence, emergence_worker=False
    )

    async def run() -> list[dict[str, object]]:
        await scorer.start()
        try:
            out = []
            for chunk in chunks:
                out.extend(await score_rows(scorer, chunk, columns))
            return out
        finally:
            await scorer.stop()

    records = asyncio.run(run())
    want = [r for case in cases for r in ref.kimi(case)]
    assert [rec["reward"] for rec in records] == pytest.approx(want)
    sizes_seen = [rec["logs"]["group/size"] for rec in records]  # type: ignore[index]
    assert sizes_seen == [float(len(c.responses)) for c in cases for _ in c.responses]
    assert all(rec["logs"]["group/incomplete"] == 0.0 for rec in records)  # type: ignore[index]
