"""Pairwise reward-model evaluation (RewardBench-style): is chosen scored strictly above rejected?

Rows are JSONL `{prompt, chosen, rejected[, subset]}`. Accuracy is reported overall and per
value of the subset column; a tie counts as wrong (as RewardBench counts it). A row that is
not usable JSON, or a pair the grader could not score, is counted apart and never in the
accuracy, so a broken model or file cannot pass for a bad one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from arbiter.contract import Sample, Status
from services.evaluate.strict_json import dumps
from services.evaluate.targets import (
    Target,
    check_targets,
    first_json_line,
    json_object_with,
    write_text_atomic,
)
from services.scoring.grader import Grader

NO_SUBSET = "(none)"


@dataclass(frozen=True)
class PairsJob:
    """One rm-eval run: the pairs file, its columns and where the results go. The one list of
    rm-eval's parameters: the CLI fills it, `evaluate_pairs` and `rm_eval_command` read it."""

    input_path: Path
    prompt_key: str = "prompt"
    chosen_key: str = "chosen"
    rejected_key: str = "rejected"
    subset_key: str = "subset"
    batch_pairs: int = 64
    output: Path | None = None  # JSONL, one line per scored pair
    summary: Path | None = None  # JSON file with the report
    overwrite: bool = False  # replace the output / summary of an earlier rm-eval


@dataclass
class SubsetStats:
    pairs: int = 0
    correct: int = 0
    ties: int = 0
    margin_sum: float = 0.0

    @property
    def accuracy(self) -> float:
        return self.correct / self.pairs if self.pairs else 0.0

    def add(self, chosen: float, rejected: float) -> bool:
        self.pairs += 1
        self.margin_sum += chosen - rejected
        self.ties += chosen == rejected
        won = chosen > rejected
        self.correct += won
        return won


@dataclass
class PairwiseReport:
    overall: SubsetStats = field(default_factory=SubsetStats)
    subsets: dict[str, SubsetStats] = field(default_factory=dict)
    invalid_rows: int = 0
    failed_pairs: int = 0
    problems: list[str] = field(default_factory=list)  # the first few, for the person reading

    def add(self, subset: str, chosen: float, rejected: float) -> bool:
        self.subsets.setdefault(subset, SubsetStats()).add(chosen, rejected)
        return self.overall.add(chosen, rejected)

    def note(self, problem: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(problem)

    def as_dict(self) -> dict[str, Any]:
        def stats(s: SubsetStats) -> dict[str, float]:
            return {
                "pairs": s.pairs,
                "accuracy": s.accuracy,
                "ties": s.ties,
                "mean_margin": s.margin_sum / s.pairs if s.pairs else 0.0,
            }

        return {
            **stats(self.overall),
            "subsets": {name: stats(s) for name, s in sorted(self.subsets.items())},
            "invalid_rows": self.invalid_rows,
            "failed_pairs": self.failed_pairs,
            "problems": self.problems,
        }

    def print(self, console: Console) -> None:
        table = Table(title="pairwise accuracy (chosen > rejected)")
        for column in ("subset", "pairs", "accuracy", "ties", "mean margin"):
            table.add_column(column, justify="left" if column == "subset" else "right")
        rows = sorted(self.subsets.items()) if len(self.subsets) > 1 else []
        for name, s in [*rows, ("overall", self.overall)]:
            margin = s.margin_sum / s.pairs if s.pairs else 0.0
            # Subset names come from data: text, never rich markup (a "[/bold]" subset crashed it).
            table.add_row(escape(name), str(s.pairs), f"{s.accuracy:.4f}", str(s.ties), f"{margin:+.4f}")
        console.print(table)
        if self.invalid_rows or self.failed_pairs:
            console.print(
                f"[yellow]{self.invalid_rows} unusable rows and {self.failed_pairs} unscored pairs "
                "are not in the accuracy[/yellow]"
            )
            for problem in self.problems[:5]:
                console.print(escape(f"  {problem}"))


@dataclass(frozen=True)
class _Pair:
    line: int
    subset: str
    chosen: Sample
    rejected: Sample


def _rows(path: Path, keys: tuple[str, str, str, str], report: PairwiseReport) -> Iterator[_Pair]:
    prompt_key, chosen_key, rejected_key, subset_key = keys
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                report.invalid_rows += 1
                report.note(f"line {number}: not JSON ({exc})")
                continue
            prompt = row.get(prompt_key, "") if isinstance(row, dict) else None
            chosen = row.get(chosen_key) if isinstance(row, dict) else None
            rejected = row.get(rejected_key) if isinstance(row, dict) else None
            if not (isinstance(prompt, str) and isinstance(chosen, str) and isinstance(rejected, str)):
                report.invalid_rows += 1
                report.note(f"line {number}: needs string {prompt_key!r}, {chosen_key!r}, {rejected_key!r}")
                continue
            subset = row.get(subset_key)
            yield _Pair(
                number,
                str(subset) if subset not in (None, "") else NO_SUBSET,
                Sample(prompt=prompt, response=chosen),
                Sample(prompt=prompt, response=rejected),
            )


_RECORD_KEYS = ("line", "subset", "chosen_reward", "rejected_reward", "correct")


def _owned_output(path: Path) -> bool:
    first = first_json_line(path)
    return isinstance(first, dict) and all(key in first for key in _RECORD_KEYS)


def check_rm_eval_files(job: PairsJob) -> None:
    """Refuse (UnsafeOutput) an output that is the input, a link, or a file rm-eval did not write;
    an earlier rm-eval's files are replaced only with `overwrite`. Checked before the model loads."""
    targets = [
        Target(path, what, owned, replace=job.overwrite)
        for path, what, owned in (
            (job.output, "output", _owned_output),
            (job.summary, "summary", lambda p: json_object_with(p, ("accuracy", "subsets", "invalid_rows"))),
        )
        if path is not None
    ]
    check_targets(targets, [job.input_path], "arbiter rm-eval")


def _open_output(path: Path) -> IO[str]:
    # O_NOFOLLOW: a link put at the name after the check is refused, never written through.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "w", encoding="utf-8")


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


async def evaluate_pairs(job: PairsJob, grader: Grader, console: Console | None = None) -> PairwiseReport:
    """Score every pair with `grader`; `job.output` gets one JSON line per scored pair."""
    check_rm_eval_files(job)
    path = job.input_path
    report = PairwiseReport()
    rows = _rows(path, (job.prompt_key, job.chosen_key, job.rejected_key, job.subset_key), report)
    sink = _open_output(job.output) if job.output else None
    progress = Progress(
        TextColumn("[bold]rm-eval[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[accuracy]:.3f}"),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
        transient=False,
    )
    try:
        with progress:
            task = progress.add_task("pairs", total=_count_lines(path), accuracy=0.0)
            batch: list[_Pair] = []
            for pair in rows:
                batch.append(pair)
                if len(batch) >= job.batch_pairs:
                    await _score_batch(batch, grader, report, sink)
                    progress.update(task, advance=len(batch), accuracy=report.overall.accuracy)
                    batch = []
            if batch:
                await _score_batch(batch, grader, report, sink)
            progress.update(task, completed=_count_lines(path), accuracy=report.overall.accuracy)
    finally:
        if sink is not None:
            sink.close()
    return report


async def _score_batch(batch: list[_Pair], grader: Grader, report: PairwiseReport, sink: Any) -> None:
    samples = [sample for pair in batch for sample in (pair.chosen, pair.rejected)]
    try:
        results = await grader.score(samples)
    except Exception as exc:
        report.failed_pairs += len(batch)
        report.note(f"lines {batch[0].line}-{batch[-1].line}: grader failed: {exc}")
        return
    for pair, chosen, rejected in zip(batch, results[0::2], results[1::2], strict=True):
        if chosen.status is not Status.OK or rejected.status is not Status.OK:
            report.failed_pairs += 1
            bad = chosen if chosen.status is not Status.OK else rejected
            report.note(f"line {pair.line}: {bad.status.value}: {bad.detail}")
            continue
        won = report.add(pair.subset, chosen.reward, rejected.reward)
        if sink is not None:
            record = {
                "line": pair.line,
                "subset": pair.subset,
                "chosen_reward": chosen.reward,
                "rejected_reward": rejected.reward,
                "correct": won,
            }
            sink.write(dumps(record) + "\n")


def rm_eval_command(job: PairsJob, checkpoint: str = "", config: Path | None = None) -> PairwiseReport:
    """`arbiter rm-eval`: the reward_rm settings (env/YAML; `checkpoint` overrides) on a pairs file."""
    import asyncio

    from pydantic_settings import SettingsConfigDict

    from services.common.settings import KitSettings, load_settings
    from services.reward_rm.grader import RMGrader
    from services.reward_rm.settings import RMServiceSettings

    class _Settings(KitSettings):
        # The whole tree's YAML and env may be given: other services' sections are not ours to check.
        model_config = SettingsConfigDict(**{**KitSettings.model_config, "extra": "ignore"})
        reward_rm: RMServiceSettings = RMServiceSettings()

    check_rm_eval_files(job)  # before the model loads
    settings = load_settings(_Settings, config).reward_rm
    if checkpoint:
        settings = settings.model_copy(update={"checkpoint": checkpoint})
    console = Console(stderr=True, soft_wrap=True)
    grader = RMGrader(settings)

    async def run() -> PairwiseReport:
        try:
            await grader.start()
            return await evaluate_pairs(job, grader, console)
        finally:
            await grader.aclose()

    report = asyncio.run(run())
    report.print(console)
    if job.summary is not None:
        write_text_atomic(job.summary, dumps(report.as_dict(), indent=2) + "\n")
    return report
