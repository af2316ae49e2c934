"""Score a JSONL file in-process with the same engine the servers use.

Every input line gives exactly one output line, in order: a line that is not JSON or
lacks a column is written back with status INVALID_INPUT and a detail, never dropped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from services.common.cache import make_cache
from services.common.contract import GraderInfo, Result, Sample, Status
from services.common.engine import ScoringEngine
from services.common.grader import Grader
from services.common.settings import KitSettings, ServerSettings

SUMMARY_LOGS = ("reflect/any", "reflect/total", "response/words", "response/stopped", "response/repetition")


@dataclass(frozen=True)
class ColumnMap:
    prompt: str = "prompt"
    response: str = "response"
    label: str = "label"


@dataclass
class Summary:
    grader: GraderInfo | None = None
    rows: int = 0
    reward_sum: float = 0.0
    score_sum: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    log_sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SUMMARY_LOGS, 0.0))

    def add(self, result: Result) -> None:
        self.rows += 1
        self.reward_sum += result.reward
        self.score_sum += result.score
        self.statuses[result.status.value] += 1
        for key in SUMMARY_LOGS:
            self.log_sums[key] += result.logs.get(key, 0.0)

    def as_dict(self) -> dict[str, Any]:
        n = max(self.rows, 1)
        return {
            "grader": self.grader.model_dump() if self.grader else None,
            "rows": self.rows,
            "mean_reward": self.reward_sum / n,
            "mean_score": self.score_sum / n,
            "statuses": dict(self.statuses),
            "mean_logs": {k: self.log_sums[k] / n for k in SUMMARY_LOGS},
        }

    def print(self, console: Console) -> None:
        data = self.as_dict()
        title = "scored"
        if self.grader:
            title = f"{self.grader.name} {self.grader.version} (config {self.grader.config_hash})"
        table = Table(title=title, show_header=False)
        table.add_row("rows", str(data["rows"]))
        table.add_row("mean reward", f"{data['mean_reward']:.4f}")
        table.add_row("mean score", f"{data['mean_score']:.4f}")
        for status, count in sorted(self.statuses.items()):
            table.add_row(f"status {status}", str(count))
        for key, value in data["mean_logs"].items():
            table.add_row(f"mean {key}", f"{value:.3f}")
        console.print(table)


def _parse_row(line: str, number: int, columns: ColumnMap) -> tuple[dict[str, Any], Sample | str]:
    """The row as read, and its Sample or the reason there is none."""
    try:
        row = json.loads(line)
    except ValueError as exc:
        return {"_line": number, "_raw": line[:1000]}, f"line {number} is not JSON: {exc}"
    if not isinstance(row, dict):
        return {"_line": number, "_raw": row}, f"line {number} is not a JSON object"
    response = row.get(columns.response)
    if not isinstance(response, str):
        return row, f"line {number}: column {columns.response!r} missing or not a string"
    prompt = row.get(columns.prompt, "")
    label = row.get(columns.label, "")
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        return row, f"line {number}: column {columns.prompt!r} is not a string"
    if label is None:
        label = ""
    if not isinstance(label, str):
        label = json.dumps(label, ensure_ascii=False) if isinstance(label, dict | list) else str(label)
    metadata = {k: v for k, v in row.items() if k in ("datasource", "finish_reason") and isinstance(v, str)}
    return row, Sample(prompt=prompt, response=response, label=label, metadata=metadata)


def _chunks(path: Path, size: int) -> Iterator[list[tuple[int, str]]]:
    chunk: list[tuple[int, str]] = []
    with path.open(encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            chunk.append((number, line))
            if len(chunk) >= size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _count_rows(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


async def score_file(
    input_path: Path,
    output_path: Path,
    grader: Grader,
    server: ServerSettings,
    settings: KitSettings,
    columns: ColumnMap = ColumnMap(),
    batch_size: int = 256,
    console: Console | None = None,
) -> Summary:
    engine = ScoringEngine(grader, server, make_cache(settings.cache), settings.emergence)
    summary = Summary(grader=engine.info)
    await engine.start()
    progress = Progress(
        TextColumn("[bold]scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.1f} rows/s"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=console is None,
    )
    try:
        with progress, output_path.open("w", encoding="utf-8") as out:
            task = progress.add_task("score", total=_count_rows(input_path), rate=0.0)
            for chunk in _chunks(input_path, batch_size):
                parsed = [_parse_row(line, number, columns) for number, line in chunk]
                samples = [item for _, item in parsed if isinstance(item, Sample)]
                scored = iter(await engine.score(samples) if samples else [])
                for row, item in parsed:
                    if isinstance(item, Sample):
                        result = next(scored)
                    else:
                        result = engine.finish_fallback(None, Status.INVALID_INPUT, item)
                    summary.add(result)
                    record = {**row, **result.model_dump(mode="json")}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                elapsed = progress.tasks[0].elapsed or 0.0
                progress.update(task, advance=len(chunk), rate=summary.rows / elapsed if elapsed else 0.0)
    finally:
        await engine.stop()
    return summary
