"""`arbiter compare` on two real runs: deltas, prompt flips and a report with plots."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.evaluate.rows import math_rows, write_jsonl

ARBITER = [sys.executable, "-m", "services.cli"]


def arbiter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARBITER, *args], capture_output=True, text=True, timeout=180)


def test_compare_two_checkpoints(tmp_path: Path) -> None:
    rows = math_rows(80)
    better = [dict(r, response=f"{r['id']}: \\boxed{{{r['label']}}}") if r["id"] % 2 else r for r in rows]
    write_jsonl(tmp_path / "a.jsonl", rows)
    write_jsonl(tmp_path / "b.jsonl", better)
    for name in ("a", "b"):
        done = arbiter(
            "score",
            str(tmp_path / f"{name}.jsonl"),
            "-o",
            str(tmp_path / f"run_{name}.jsonl"),
            "--grader",
            "math",
            "--no-report",
        )
        assert done.returncode == 0, done.stderr
    done = arbiter(
        "compare",
        str(tmp_path / "run_a.jsonl"),
        str(tmp_path / "run_b.jsonl"),
        "--html",
        str(tmp_path / "cmp.html"),
        "--json",
        str(tmp_path / "cmp.json"),
    )
    assert done.returncode == 0, done.stderr
    diff = json.loads((tmp_path / "cmp.json").read_text())
    a = json.loads((tmp_path / "run_a.summary.json").read_text())
    b = json.loads((tmp_path / "run_b.summary.json").read_text())
    pass1 = diff["sections"]["overall"]["pass@1"]
    assert pass1["delta"] == b["overall"]["pass@1"] - a["overall"]["pass@1"] and pass1["delta"] > 0
    assert diff["prompts"]["regressed"] == 0 and diff["prompts"]["improved"] > 0
    assert "pass@1" in done.stdout and "math500" in done.stdout
    assert (tmp_path / "cmp.html").read_text().count("<svg") == 2
    by_summary = arbiter(
        "compare", str(tmp_path / "run_a.summary.json"), str(tmp_path / "run_b.summary.json")
    )
    assert by_summary.returncode == 0 and "pass@1" in by_summary.stdout
