"""The summary as a terminal table: the numbers a person checks first."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

_SHOWN_LOGS = ("reflect/any", "reflect/total", "response/words", "response/stopped", "response/repetition")


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, int | float) else escape(str(value))


def print_summary(summary: dict[str, Any], console: Console) -> None:
    grader = summary.get("grader") or {}
    title = f"{grader.get('name')} {grader.get('version')} (config {grader.get('config_hash')})"
    table = Table(title=escape(title))  # names come from data and settings: never rich markup
    table.add_column("metric")
    sections = {"overall": summary["overall"], **summary["by_datasource"]}
    if len(sections) == 2:  # one datasource: its column repeats "overall"
        sections = {"overall": summary["overall"]}
    for name in sections:
        table.add_column(escape(name), justify="right")

    def row(label: str, pick: Any) -> None:
        table.add_row(label, *(pick(m) for m in sections.values()))

    row("rows", lambda m: escape(str(m["rows"])))
    row("prompts", lambda m: escape(str(m["prompts"])))
    row("mean reward", lambda m: _fmt(m["mean_reward"]))
    row("mean score", lambda m: _fmt(m["mean_score"]))
    row("pass@1", lambda m: _fmt(m["pass@1"]))
    for k in summary["ks"]:
        if k > 1:
            row(f"pass@{k}", lambda m, k=k: _fmt(m["pass@k"][str(k)]["value"]))
    for k in summary["ks"]:
        if k > 1:
            row(f"maj@{k}", lambda m, k=k: _fmt(m["maj@k"][str(k)]["value"]))
    if any(m.get("unusable_rows") for m in sections.values()):
        row("unusable rows", lambda m: escape(str(m.get("unusable_rows", 0))))
    statuses = sorted({s for m in sections.values() for s in m["statuses"]})
    for status in statuses:
        row(escape(f"status {status}"), lambda m, s=status: escape(str(m["statuses"].get(s, 0))))
    for key in _SHOWN_LOGS:
        row(f"mean {key}", lambda m, key=key: f"{m['mean_logs'].get(key, 0.0):.3f}")
    console.print(table)
    for warning in summary.get("warnings") or []:
        console.print(f"[yellow]warning:[/yellow] {escape(str(warning))}")
