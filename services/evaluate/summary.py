"""After scoring: the JSON summary and the HTML report, both computed from the whole output."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.evaluate.passk import Aggregate, aggregate
from services.evaluate.report import write_report
from services.evaluate.runner import RunOutcome, RunPlan
from services.evaluate.strict_json import dumps
from services.evaluate.targets import write_text_atomic


def default_summary_path(output: Path) -> Path:
    return output.with_name(output.stem + ".summary.json")


def default_report_path(output: Path) -> Path:
    return output.with_name(output.stem + ".report.html")


def summarize(
    plan: RunPlan, outcome: RunOutcome, ks: Sequence[int] | None, threshold: float
) -> tuple[dict[str, Any], Aggregate]:
    tally = outcome.tally
    usable = tally is not None and tally.threshold == threshold and tally.columns == plan.columns
    agg = tally if tally is not None and usable else aggregate(plan.output_path, plan.columns, threshold)
    summary = {
        "grader": outcome.grader.model_dump(mode="json"),
        "input": outcome.manifest["input"],
        "source": outcome.manifest["source"],
        "columns": outcome.manifest["columns"],
        "output": str(plan.output_path),
        "input_rows": outcome.total,
        "resumed_from": outcome.resumed_from,
        **agg.summary(ks),
    }
    return summary, agg


def write_outputs(
    summary: dict[str, Any], agg: Aggregate, summary_path: Path | None, report_path: Path | None
) -> None:
    if summary_path is not None:
        write_text_atomic(summary_path, dumps(summary, indent=2) + "\n")
    if report_path is not None:
        write_report(report_path, summary, agg)
