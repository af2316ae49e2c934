"""Names from data (datasources, file names, metric values) are text: never HTML nor rich markup.

Before: a datasource named `<script>...` ran in the `arbiter compare --html` page,
and one named `[/bold]` crashed the summary tables of `arbiter score` and `arbiter compare`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from services.evaluate.compare_runs import compare, print_comparison, render
from services.evaluate.tables import print_summary
from tests.evaluate.rows import math_rows, write_jsonl

ARBITER = [sys.executable, "-m", "services.cli"]
PAYLOADS = ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "[/bold]", "[red]x[/]")


def arbiter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARBITER, *args], capture_output=True, text=True, timeout=180)


def hostile_rows() -> list[dict[str, object]]:
    rows = math_rows(16)
    for i, row in enumerate(rows):
        row["datasource"] = PAYLOADS[i % len(PAYLOADS)]
    return rows


def test_score_and_compare_with_hostile_datasource_names(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", hostile_rows())
    for name in ("a", "b"):
        done = arbiter("score", str(source), "-o", str(tmp_path / f"{name}.jsonl"), "--grader", "math")
        assert done.returncode == 0, done.stderr
        assert "[/bold]" in done.stderr and "<script>" in done.stderr  # shown as text
    done = arbiter(
        "compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--html", str(tmp_path / "c.html")
    )
    assert done.returncode == 0, done.stderr
    assert "[/bold]" in done.stdout
    for page in (tmp_path / "c.html", tmp_path / "a.report.html"):
        text = page.read_text()
        assert "<script" not in text and "<img" not in text, page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_hand_edited_summary_cannot_inject_html_or_markup(tmp_path: Path) -> None:
    metrics = {
        "rows": "<script>alert(3)</script>",
        "prompts": 1,
        "mean_reward": "[/bold]",
        "mean_score": 0.5,
        "accuracy": 0.5,
        "pass@1": "<img src=x onerror=alert(4)>",
        "pass@k": {},
        "maj@k": {},
        "statuses": {"<b>OK</b>": 1, "[/red]": 2},
        "errors": 0,
        "timeouts": 0,
        "mean_logs": {},
    }
    summary = {"ks": [1], "overall": metrics, "by_datasource": {"<script>alert(5)</script>": metrics}}
    diff = compare(summary, summary)
    names = ("<script>a</script>[/bold]", "b[/]")
    page = render(diff, summary, summary, names)
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    console = Console(record=True, width=200)
    print_comparison(diff, names, console)
    print_summary({**summary, "grader": {"name": "[/bold]"}}, console)
    assert "[/bold]" in console.export_text()


def test_summary_table_from_a_real_run_prints_markup_as_text(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", hostile_rows())
    done = arbiter("score", str(source), "-o", str(tmp_path / "o.jsonl"), "--grader", "math", "--no-report")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "o.summary.json").read_text())
    assert set(summary["by_datasource"]) == set(PAYLOADS)


def test_rm_eval_report_prints_subset_names_as_text() -> None:
    from services.evaluate.rm_eval import PairwiseReport

    report = PairwiseReport()
    for subset in PAYLOADS:
        report.add(subset, 1.0, 0.0)
    report.invalid_rows = 1
    report.note("line 3: [/bold] is not JSON")
    console = Console(record=True, width=200)
    report.print(console)
    text = console.export_text()
    assert "[/bold]" in text and "[red]x[/]" in text
