"""Score a file into an append-only JSONL, resuming a killed run where it stopped.

Chunks are scored concurrently (a window of them in flight) but written strictly in input
order, one write per chunk, so the output's complete lines are always a prefix of the input:
kill the process at any point and the same command continues with no row lost or repeated.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from arbiter.contract import GraderInfo, Sample
from services.evaluate.columns import ColumnMap, group_of, to_sample
from services.evaluate.manifest import (
    build_manifest,
    load_manifest_file,
    manifest_path,
    mismatch,
    read_manifest,
    write_manifest,
)
from services.evaluate.passk import Aggregate, read_records
from services.evaluate.readers import Format, InputRow, count_rows, read_rows
from services.evaluate.resumable_jsonl import AppendWriter, completed_rows, encode_plain
from services.evaluate.scorers import Scorer
from services.evaluate.targets import (
    Target,
    check_targets,
    first_json_line,
    head,
    html_titled,
    json_object_with,
)

ChunkScorer = Callable[[list[InputRow]], Awaitable[list[dict[str, Any]]]]


class RunConflict(RuntimeError):
    """The output holds rows of a different run; resuming would mix two rewards or inputs."""


@dataclass(frozen=True)
class RunPlan:
    input_path: Path
    output_path: Path
    input_format: Format
    columns: ColumnMap
    batch_size: int = 256
    window: int = 4  # chunks in flight at once
    overwrite: bool = False
    durable: bool = False


@dataclass(frozen=True)
class RunOutcome:
    total: int
    resumed_from: int  # rows already in the output when this run started
    grader: GraderInfo
    manifest: dict[str, Any]
    # Every row of the output, added as it was written (resumed rows read back first), or None:
    # the summary reads the output back instead.
    tally: Aggregate | None = None


async def score_rows(scorer: Scorer, rows: list[InputRow], columns: ColumnMap) -> list[dict[str, Any]]:
    """The output records of `rows`, in order: each row as read plus its result."""
    parsed = [to_sample(row, columns) for row in rows]
    samples = [item for _, item in parsed if isinstance(item, Sample)]
    sizes = Counter(s.metadata["group_id"] for s in samples if "group_id" in s.metadata)
    if sizes:  # a group is whole in its chunk (`_chunks`): its terms are computed in this call
        samples = [
            s.model_copy(
                update={"metadata": {**s.metadata, "group_size": str(sizes[s.metadata["group_id"]])}}
            )
            if "group_id" in s.metadata
            else s
            for s in samples
        ]
    scored = iter(await scorer.score(samples))
    records = []
    for record, item in parsed:
        result = next(scored) if isinstance(item, Sample) else scorer.invalid(item)
        records.append({**record, **result.model_dump(mode="json")})
    return records


def _chunks(rows: Iterator[InputRow], size: int, prompt_id: str | None = None) -> Iterator[list[InputRow]]:
    """Chunks of `size` rows; with a `prompt_id` column, a chunk also takes the rows that follow
    with its last row's prompt id, so that a group of adjacent rows is scored in one call (the
    gateway's group-aware recipes, docs/group-rewards.md)."""
    held: InputRow | None = None
    while True:
        chunk = ([held] if held is not None else []) + list(islice(rows, size - (held is not None)))
        held = None
        if not chunk:
            return
        if prompt_id is not None:
            last = group_of(chunk[-1], prompt_id)
            for row in rows:
                if last is None or group_of(row, prompt_id) != last:
                    held = row
                    break
                chunk.append(row)
        yield chunk


def _owned_output(path: Path) -> bool:
    """An output is arbiter's when its manifest says so and its first row is a scored record."""
    if read_manifest(path) is None:
        return False
    first = first_json_line(path)
    if first is None:  # killed during the first write: a torn line, which resuming cuts
        return b"\n" not in head(path)
    return isinstance(first, dict) and "reward" in first and "status" in first


def score_targets(output: Path, summary: Path | None = None, report: Path | None = None) -> list[Target]:
    """Every file `arbiter score` writes, with how to recognise its own copy of each."""
    targets = [
        Target(output, "output", _owned_output),
        Target(manifest_path(output), "run record", lambda p: load_manifest_file(p) is not None),
    ]
    if summary is not None:
        targets.append(
            Target(summary, "summary", lambda p: json_object_with(p, ("overall", "by_datasource", "ks")))
        )
    if report is not None:
        targets.append(Target(report, "report", html_titled("arbiter score")))
    return targets


def check_score_files(plan: RunPlan, summary: Path | None = None, report: Path | None = None) -> None:
    """Refuse (UnsafeOutput) before any work: an input, a link, a file arbiter did not write."""
    check_targets(score_targets(plan.output_path, summary, report), [plan.input_path], "arbiter score")
    record = manifest_path(plan.output_path)
    other = (load_manifest_file(record) or {}).get("output")
    if isinstance(other, str) and other != plan.output_path.name and record.with_name(other).exists():
        raise RunConflict(f"{record} is the run record of {other}; choose another --output name")


def prepare(plan: RunPlan, grader: GraderInfo, source: str) -> tuple[int, dict[str, Any]]:
    """Rows to skip and the manifest; raises RunConflict when the output belongs to another run."""
    check_score_files(plan)
    manifest = build_manifest(
        grader,
        plan.input_path,
        plan.input_format,
        plan.columns.as_dict(),
        source,
        plan.output_path.name,
    )
    previous = read_manifest(plan.output_path)
    if previous is not None and plan.output_path.exists() and not plan.overwrite:
        reason = mismatch(previous, manifest)
        if reason:
            raise RunConflict(
                f"{plan.output_path} holds another run's rows ({reason}); "
                "pass --overwrite to start over or choose another --output"
            )
        return completed_rows(plan.output_path), manifest
    write_manifest(plan.output_path, manifest)
    return -1, manifest  # -1: start a fresh output


def progress_bar(console: Console | None) -> Progress:
    return Progress(
        TextColumn("[bold]scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.1f} rows/s"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=console is None,
    )


async def run(
    plan: RunPlan,
    grader: GraderInfo,
    score_chunk: ChunkScorer,
    source: str = "in-process",
    console: Console | None = None,
    tally: Aggregate | None = None,
) -> RunOutcome:
    """Score the rows the output lacks. `tally` (optional) gets every row of the output, in order:
    the rows already there first, then each record as it is written, the values a reader of the
    output gets (a record whose line spells a value as a string is read back from that line)."""
    total = count_rows(plan.input_path, plan.input_format)
    start, manifest = prepare(plan, grader, source)
    fresh = start < 0
    start = max(start, 0)
    if tally is not None and start:
        for record in read_records(plan.output_path):
            tally.add(record)
    if console is not None and start:
        console.print(escape(f"resuming {plan.output_path}: {start} of {total} rows already scored"))
    progress = progress_bar(console)
    began = time.monotonic()
    done = 0
    with progress, AppendWriter(plan.output_path, fresh=fresh, durable=plan.durable) as writer:
        task = progress.add_task("score", total=total, completed=start, rate=0.0)
        in_flight: deque[asyncio.Task[list[dict[str, Any]]]] = deque()

        def write(records: list[dict[str, Any]]) -> None:
            nonlocal done
            lines = [encode_plain(record) for record in records]
            writer.write_lines([line for line, _ in lines])
            if tally is not None:
                for record, (line, plain) in zip(records, lines, strict=True):
                    tally.add(record if plain else json.loads(line))
            done += len(records)
            elapsed = time.monotonic() - began
            progress.update(task, advance=len(records), rate=done / elapsed if elapsed > 0 else 0.0)

        try:
            rows = read_rows(plan.input_path, plan.input_format, start)
            for chunk in _chunks(rows, max(1, plan.batch_size), plan.columns.prompt_id):
                in_flight.append(asyncio.ensure_future(score_chunk(chunk)))
                if len(in_flight) >= max(1, plan.window):
                    write(await in_flight.popleft())
            while in_flight:
                write(await in_flight.popleft())
        finally:
            for pending in in_flight:
                pending.cancel()
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
    return RunOutcome(total=total, resumed_from=start, grader=grader, manifest=manifest, tally=tally)


async def run_scorer(
    plan: RunPlan,
    scorer: Scorer,
    console: Console | None = None,
    source: str = "in-process",
    tally: Aggregate | None = None,
) -> tuple[RunOutcome, asyncio.Future[None]]:
    """Start the scorer and run the plan through it; its stop (worker pools shutting down) runs
    in the background, so the summary is computed meanwhile: the caller awaits the future."""
    await scorer.start()
    try:
        outcome = await run(
            plan, scorer.info, lambda rows: score_rows(scorer, rows, plan.columns), source, console, tally
        )
    except BaseException:
        await scorer.stop()
        raise
    return outcome, asyncio.ensure_future(scorer.stop())
