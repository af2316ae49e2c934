"""`arbiter compare RUN_A RUN_B`: the difference between two runs, as a table and a report.

A run is a scored output (JSONL, its manifest names the columns) or its summary JSON. With
two outputs the comparison also counts prompts whose pass rate went up or down.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.evaluate import plots
from services.evaluate.columns import ColumnMap
from services.evaluate.manifest import read_manifest
from services.evaluate.passk import OVERALL, Aggregate, aggregate
from services.evaluate.report import metrics_table, page
from services.evaluate.strict_json import dumps
from services.evaluate.targets import Target, check_targets, html_titled, json_object_with, write_text_atomic

_HEADLINE = ("rows", "mean_reward", "mean_score", "pass@1", "accuracy", "errors", "timeouts")


def _columns(output: Path) -> ColumnMap:
    manifest = read_manifest(output) or {}
    stored = manifest.get("columns") or {}
    return ColumnMap(**{k: v for k, v in stored.items() if k in ColumnMap.__dataclass_fields__})


def load_run(path: Path, ks: list[int] | None = None) -> tuple[dict[str, Any], Aggregate | None]:
    """A run's summary (and its per-row aggregate when `path` is a scored output)."""
    if path.suffix == ".json":
        summary = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(summary, dict) or "overall" not in summary:
            raise ValueError(f"{path} is not an arbiter score summary")
        return summary, None
    agg = aggregate(path, _columns(path))
    manifest = read_manifest(path) or {}
    return {"grader": manifest.get("grader"), "input": manifest.get("input", {}), **agg.summary(ks)}, agg


def _headline(metrics: dict[str, Any], ks: list[int]) -> dict[str, float | None]:
    values: dict[str, float | None] = {k: _number(metrics.get(k)) for k in _HEADLINE}
    for k in ks:
        if k > 1:
            values[f"pass@{k}"] = _number((metrics.get("pass@k", {}).get(str(k)) or {}).get("value"))
            values[f"maj@{k}"] = _number((metrics.get("maj@k", {}).get(str(k)) or {}).get("value"))
    return values


def _number(value: Any) -> float | None:
    """A metric as a number; anything else (a hand-edited summary) is missing, not text to show."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def prompt_changes(a: Aggregate, b: Aggregate) -> dict[str, int]:
    """Prompts (present in both runs) whose pass rate rose, fell or stayed."""
    rates = [
        {pid: sum(ok for _, ok in votes) / len(votes) for pid, votes in agg.groups[OVERALL].prompts.items()}
        for agg in (a, b)
    ]
    shared = rates[0].keys() & rates[1].keys()
    up = sum(1 for p in shared if rates[1][p] > rates[0][p] + 1e-12)
    down = sum(1 for p in shared if rates[1][p] < rates[0][p] - 1e-12)
    return {
        "shared_prompts": len(shared),
        "improved": up,
        "regressed": down,
        "unchanged": len(shared) - up - down,
    }


def _ks(summary: dict[str, Any], which: str) -> set[int]:
    """The summary's `ks` (a hand-edited one may hold anything): a clear error unless integers."""
    ks = summary.get("ks", [1])
    if not isinstance(ks, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in ks):
        raise ValueError(f"run {which}: 'ks' must be a list of integers (e.g. [1, 8]), not {ks!r}"[:300])
    return set(ks)


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    ks = sorted(_ks(a, "A") & _ks(b, "B"))
    sections = ["overall", *sorted(set(a["by_datasource"]) | set(b["by_datasource"]))]
    out: dict[str, Any] = {"ks": ks, "sections": {}}
    for name in sections:
        ma = a["overall"] if name == "overall" else a["by_datasource"].get(name, {})
        mb = b["overall"] if name == "overall" else b["by_datasource"].get(name, {})
        ha, hb = _headline(ma, ks), _headline(mb, ks)
        out["sections"][name] = {key: _delta(ha[key], hb[key]) for key in ha}
    return out


def _delta(a: float | None, b: float | None) -> dict[str, float | None]:
    return {"a": a, "b": b, "delta": None if a is None or b is None else b - a}


def print_comparison(diff: dict[str, Any], names: tuple[str, str], console: Console) -> None:
    for section, rows in diff["sections"].items():
        # Section (datasource) and file names come from data: never read as rich markup.
        table = Table(title=escape(f"{section}: {names[0]} -> {names[1]}"))
        for column in ("metric", "A", "B", "delta"):
            table.add_column(column, justify="left" if column == "metric" else "right")
        for key, v in rows.items():
            delta = v["delta"]
            style = "" if not delta else ("green" if delta > 0 else "red")
            if key in ("errors", "timeouts") and delta:
                style = "red" if delta > 0 else "green"
            shown = "-" if delta is None else f"{delta:+.4f}"
            table.add_row(
                escape(key),
                escape(_num(v["a"])),
                escape(_num(v["b"])),
                f"[{style}]{shown}[/{style}]" if style else escape(shown),
            )
        console.print(table)
    if "prompts" in diff:
        console.print(
            escape("prompts (pass rate B vs A): " + ", ".join(f"{k} {v}" for k, v in diff["prompts"].items()))
        )


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _cell(value: Any) -> str:
    """A table cell of the HTML report: every value may come from a (hand-edited) summary file."""
    return f"<td>{html.escape(value if isinstance(value, str) else _num(value))}</td>"


def _signed(value: Any) -> str:
    return _num(value) if not isinstance(value, float) else format(value, "+.4f")


def render(diff: dict[str, Any], a: dict[str, Any], b: dict[str, Any], names: tuple[str, str]) -> str:
    sections = [s for s in diff["sections"] if s != "overall"] or ["overall"]
    series = [
        (names[i], [diff["sections"][s]["pass@1"][side] for s in sections])
        for i, side in enumerate(("a", "b"))
    ]
    reward = [
        (names[i], [diff["sections"][s]["mean_reward"][side] for s in sections])
        for i, side in enumerate(("a", "b"))
    ]
    figures = "".join(
        f'<div class="plot">{svg}</div>'
        for svg in (
            plots.bars(sections, series, "pass@1 per datasource", "pass@1"),
            plots.bars(sections, reward, "Mean reward per datasource", "reward"),
        )
    )
    # Datasource names and metric values come from data: every one is escaped (stored XSS otherwise).
    delta_rows = "".join(
        f"<tr>{_cell(s)}{_cell(k)}{_cell(_num(v['a']))}{_cell(_num(v['b']))}{_cell(_signed(v['delta']))}</tr>"
        for s, rows in diff["sections"].items()
        for k, v in rows.items()
    )
    return page(
        f"arbiter compare: {names[0]} vs {names[1]}",
        [
            ("Plots", f'<div class="plots">{figures}</div>'),
            (
                "Differences",
                "<table><tr><th>section</th><th>metric</th><th>A</th><th>B</th><th>B - A</th></tr>"
                + delta_rows
                + "</table>",
            ),
            (f"A: {names[0]}", metrics_table(a)),
            (f"B: {names[1]}", metrics_table(b)),
        ],
    )


def run_compare(
    path_a: Path, path_b: Path, console: Console, html_path: Path | None, json_path: Path | None
) -> dict[str, Any]:
    targets = [
        Target(path, what, owned)
        for path, what, owned in (
            (html_path, "--html report", html_titled("arbiter compare")),
            (json_path, "--json file", lambda p: json_object_with(p, ("ks", "sections"))),
        )
        if path is not None
    ]
    check_targets(targets, [path_a, path_b], "arbiter compare")
    a, agg_a = load_run(path_a)
    b, agg_b = load_run(path_b)
    diff = compare(a, b)
    if agg_a is not None and agg_b is not None:
        diff["prompts"] = prompt_changes(agg_a, agg_b)
    names = (path_a.name, path_b.name) if path_a.name != path_b.name else (str(path_a), str(path_b))
    print_comparison(diff, names, console)
    if html_path is not None:
        write_text_atomic(html_path, render(diff, a, b, names))
    if json_path is not None:
        write_text_atomic(json_path, dumps(diff, indent=2) + "\n")
    return diff
