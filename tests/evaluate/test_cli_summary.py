"""What `arbiter score` says about rows it cannot group, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.evaluate.rows import math_rows

ARBITER = [sys.executable, "-m", "services.cli"]


def score(source: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ARBITER, "score", str(source), "-o", str(out), "--grader", "math", *extra],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_broken_lines_are_left_out_and_said_so(tmp_path: Path) -> None:
    rows = math_rows(32)  # 8 prompts x 4 samples
    lines = [json.dumps(r) for r in rows]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(lines) + "\n")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:5], "{not json", *lines[5:], '{"id": 99}']) + "\n")
    for source in (clean, broken):
        done = score(source, tmp_path / f"{source.stem}_out.jsonl", "--prompt-id-key", "prompt", "--k", "4")
        assert done.returncode == 0, done.stderr
    ok = json.loads((tmp_path / "clean_out.summary.json").read_text())
    got = json.loads((tmp_path / "broken_out.summary.json").read_text())
    assert got["overall"]["pass@1"] == ok["overall"]["pass@1"]
    assert got["overall"]["prompts"] == ok["overall"]["prompts"] == 8
    assert got["overall"]["pass@k"]["4"] == ok["overall"]["pass@k"]["4"]
    assert got["overall"]["unusable_rows"] == 2 and got["rows"] == 34
    assert "default" not in got["by_datasource"]
    assert "2 unusable row(s)" in done.stderr


def test_no_prompts_and_no_ids_warns_and_scores_each_row_alone(tmp_path: Path) -> None:
    rows = [dict(r, prompt="") for r in math_rows(12)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = score(source, tmp_path / "o.jsonl")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "o.summary.json").read_text())
    assert summary["ks"] == [1] and summary["overall"]["prompts"] == 12
    assert "warning" in done.stderr and "--prompt-id-key" in done.stderr
