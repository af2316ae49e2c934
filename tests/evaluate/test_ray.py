"""Scoring on a local CPU Ray instance matches in-process, row for row (tier `ray`, slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluate.rows import math_rows, write_jsonl

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(300)]
ARBITER = [sys.executable, "-m", "services.cli"]


def test_ray_scores_5000_rows_like_in_process(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(5000))
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    common = ["--grader", "math", "--no-report", "--batch", "250"]
    done = subprocess.run(
        [*ARBITER, "score", str(source), "-o", str(local), *common],
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [*ARBITER, "score", str(source), "-o", str(on_ray), *common, "--ray", "--ray-actors", "2"],
        capture_output=True,
        text=True,
        timeout=250,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    strip = [json.loads(line) for line in local.read_text().splitlines()]
    got = [json.loads(line) for line in on_ray.read_text().splitlines()]
    assert len(got) == 5000
    assert [(r["id"], r["reward"], r["status"], r["detail"]) for r in got] == [
        (r["id"], r["reward"], r["status"], r["detail"]) for r in strip
    ]
    assert got == strip  # logs too (all rows are unique, so no cache flag differs)
    assert json.loads((tmp_path / "ray.run.json").read_text())["source"] == "ray"
