"""The summary's numbers gathered while rows are written equal a second pass over the output,
whatever the rows hold (NaN, numbers or objects where strings belong) and after a resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from arbiter.contract import GraderInfo
from services.evaluate.columns import ColumnMap
from services.evaluate.passk import Aggregate, aggregate
from services.evaluate.readers import InputRow
from services.evaluate.runner import RunPlan, run

INFO = GraderInfo(name="fake", version="1", config_hash="0" * 16)
COLUMNS = ColumnMap(prompt_id="pid", answer="ans")

# JSON lines as a dataset may hold them: values JSON spells only as strings (NaN, Infinity),
# ids that are numbers or objects, datasources that are not strings, broken lines.
LINES = [
    '{"prompt": "p", "response": "r", "pid": NaN, "datasource": NaN, "ans": NaN}',
    '{"prompt": "p", "response": "r", "pid": NaN, "datasource": "NaN", "ans": "NaN"}',
    '{"prompt": "p", "response": "r", "pid": "NaN", "datasource": Infinity, "ans": -Infinity}',
    '{"prompt": "p", "response": "r", "pid": {"b": 1, "a": [1, NaN]}, "datasource": 1.5, "ans": 7}',
    '{"prompt": "p", "response": "r", "pid": {"b": 1, "a": [1, "NaN"]}, "datasource": ["x"], "ans": 7.0}',
    '{"prompt": "p", "response": "r", "pid": 3, "datasource": "a", "ans": 1e400}',
    '{"prompt": "p", "response": "r", "pid": "3", "datasource": "a", "ans": "Infinity"}',
    '{"prompt": "", "response": "r", "datasource": "a"}',
    '{"prompt": "q", "response": "r", "datasource": "a", "ans": true}',
    "{broken",
    '"a string"',
    '{"prompt": "p", "response": 5, "pid": 3, "datasource": "a"}',
]


def records(rows: list[InputRow]) -> list[dict[str, Any]]:
    """A fake grader: alternating right and wrong answers, a NaN in the logs of none of them."""
    out = []
    for row in rows:
        value = row.value if isinstance(row.value, dict) else {"_line": row.number, "_raw": row.value}
        right = row.index % 3 != 1
        status = (
            "OK"
            if isinstance(row.value, dict) and isinstance(row.value.get("response"), str)
            else ("INVALID_INPUT")
        )
        out.append(
            {
                **value,
                "reward": float(right),
                "score": float(right),
                "status": status,
                "detail": f"detail {row.index % 2}",
                "prediction": "" if right else f"guess {row.index % 2}",
                "logs": {"response/chars": float(row.index), "reflect/wait": 0.5},
            }
        )
    return out


def score(plan: RunPlan, tally: Aggregate) -> None:
    async def chunk(rows: list[InputRow]) -> list[dict[str, Any]]:
        return records(rows)

    asyncio.run(run(plan, INFO, chunk, tally=tally))


def test_the_tally_equals_a_second_pass_over_the_output(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(LINES * 3) + "\n")
    plan = RunPlan(source, tmp_path / "out.jsonl", "jsonl", COLUMNS, batch_size=5)
    tally = Aggregate(COLUMNS, 0.5)
    score(plan, tally)
    again = aggregate(plan.output_path, COLUMNS, 0.5)
    assert tally.seen == again.seen == len(LINES) * 3
    assert tally.summary() == again.summary()
    assert tally.summary([1, 2, 3]) == again.summary([1, 2, 3])
    assert tally.rewards == again.rewards and tally.lengths == again.lengths


def test_a_resumed_run_tallies_the_rows_it_found_then_its_own(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(LINES * 4) + "\n")
    plan = RunPlan(source, tmp_path / "out.jsonl", "jsonl", COLUMNS, batch_size=4)
    score(plan, Aggregate(COLUMNS, 0.5))
    lines = plan.output_path.read_bytes().splitlines(keepends=True)
    plan.output_path.write_bytes(b"".join(lines[:17]) + lines[17][:9])  # killed mid-write
    tally = Aggregate(COLUMNS, 0.5)
    score(plan, tally)
    assert plan.output_path.read_bytes() == b"".join(lines)
    assert tally.summary() == aggregate(plan.output_path, COLUMNS, 0.5).summary()
