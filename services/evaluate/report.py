"""A self-contained HTML report of one run: tables and inline-SVG plots, nothing fetched."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.evaluate import plots
from services.evaluate.passk import Aggregate
from services.evaluate.targets import write_text_atomic

MAX_POINTS = 3000  # scatter points; more only blurs the picture and bloats the file

STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;background:#fff} td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}
th:first-child,td:first-child{text-align:left} .plots{display:flex;flex-wrap:wrap;gap:16px}
.plot{background:#fff;border:1px solid #ddd} code{background:#eee;padding:1px 4px}
"""


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return html.escape(str(value))


def metrics_table(summary: dict[str, Any]) -> str:
    sections = {"overall": summary["overall"], **summary["by_datasource"]}
    head = "".join(f"<th>{html.escape(name)}</th>" for name in sections)
    rows: list[tuple[str, list[Any]]] = [
        ("rows", [m["rows"] for m in sections.values()]),
        ("prompts", [m["prompts"] for m in sections.values()]),
        ("mean reward", [m["mean_reward"] for m in sections.values()]),
        ("mean score", [m["mean_score"] for m in sections.values()]),
        ("pass@1", [m["pass@1"] for m in sections.values()]),
    ]
    for k in summary["ks"]:
        if k > 1:
            rows.append((f"pass@{k}", [m["pass@k"][str(k)]["value"] for m in sections.values()]))
            rows.append((f"maj@{k}", [m["maj@k"][str(k)]["value"] for m in sections.values()]))
    rows.append(("errors (non-OK)", [m["errors"] for m in sections.values()]))
    if any(m.get("unusable_rows") for m in sections.values()):
        rows.append(("unusable rows (left out)", [m.get("unusable_rows", 0) for m in sections.values()]))
    rows.append(("timeouts", [m["timeouts"] for m in sections.values()]))
    statuses = sorted({s for m in sections.values() for s in m["statuses"]})
    rows += [(f"status {s}", [m["statuses"].get(s, 0) for m in sections.values()]) for s in statuses]
    body = "".join(
        f"<tr><td>{html.escape(label)}</td>{''.join(f'<td>{_fmt(v)}</td>' for v in values)}</tr>"
        for label, values in rows
    )
    return f"<table><tr><th>metric</th>{head}</tr>{body}</table>"


def _thin(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    step = max(1, len(xs) // MAX_POINTS)
    return list(xs[::step]), list(ys[::step])


def run_plots(summary: dict[str, Any], agg: Aggregate) -> list[str]:
    by_source = summary["by_datasource"]
    names = list(by_source) or ["all"]
    accuracy = [m["pass@1"] for m in by_source.values()] or [summary["overall"]["pass@1"]]
    logs = summary["overall"]["mean_logs"]
    keywords = sorted(k for k in logs if k.startswith("reflect/") and k not in ("reflect/total",))
    xs, ys = _thin(agg.lengths, agg.rewards)
    return [
        plots.histogram(agg.rewards, "Reward histogram", "reward"),
        plots.scatter(xs, ys, "Reward vs response length", "response characters", "reward"),
        plots.bars(names, [("pass@1", accuracy)], "Accuracy (pass@1) per datasource", "pass@1"),
        plots.bars(
            [k.removeprefix("reflect/") for k in keywords],
            [("per response", [logs[k] for k in keywords])],
            "Reflection keywords (mean count per response; 'any' = share of responses)",
            "mean",
        ),
    ]


def page(title: str, sections: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<h2>{html.escape(name)}</h2>{content}" for name, content in sections)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def render(summary: dict[str, Any], agg: Aggregate) -> str:
    grader = summary.get("grader") or {}
    title = f"arbiter score: {summary.get('input', {}).get('path', '')}"
    identity = (
        f"<p>grader <code>{html.escape(str(grader.get('name')))}</code> "
        f"version <code>{html.escape(str(grader.get('version')))}</code> "
        f"config <code>{html.escape(str(grader.get('config_hash')))}</code>, "
        f"{_fmt(summary['rows'])} rows</p>"
    )
    figures = "".join(f'<div class="plot">{svg}</div>' for svg in run_plots(summary, agg))
    emergence = json.dumps(summary["overall"]["mean_logs"], indent=1)
    warnings = "".join(f"<li>{html.escape(str(w))}</li>" for w in summary.get("warnings") or [])
    return page(
        title,
        [
            ("Run", identity + (f"<ul>{warnings}</ul>" if warnings else "")),
            ("Metrics", metrics_table(summary)),
            ("Plots", f'<div class="plots">{figures}</div>'),
            ("Emergence statistics (means over all rows)", f"<pre>{html.escape(emergence)}</pre>"),
        ],
    )


def write_report(path: Path, summary: dict[str, Any], agg: Aggregate) -> None:
    write_text_atomic(path, render(summary, agg))
