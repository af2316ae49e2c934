"""A real `arbiter score` killed with SIGKILL at random points resumes to the uninterrupted output."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from services.evaluate.resumable_jsonl import completed_rows
from tests.evaluate.rows import math_rows, write_jsonl

ARBITER = [sys.executable, "-m", "services.cli"]


def score(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARBITER, "score", *args], capture_output=True, text=True, timeout=180)


def test_completed_rows_cuts_a_torn_last_line(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    out.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3')
    assert completed_rows(out) == 2
    assert out.read_bytes() == b'{"a": 1}\n{"a": 2}\n'
    assert completed_rows(tmp_path / "missing.jsonl") == 0


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(5000))
    reference = tmp_path / "reference.jsonl"
    done = score(str(source), "-o", str(reference), "--grader", "math", "--batch", "64")
    assert done.returncode == 0, done.stderr

    out = tmp_path / "killed.jsonl"
    args = [*ARBITER, "score", str(source), "-o", str(out), "--grader", "math", "--batch", "64"]
    rng = random.Random(int(os.environ.get("ARBITER_TEST_SEED", "7")))
    kills, progress = 0, []
    for target in sorted(rng.sample(range(200, 4800), 4)):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Kill once the output passes a random row (plus a random instant): always mid-run.
        while proc.poll() is None and (out.read_bytes().count(b"\n") if out.exists() else 0) < target:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.05))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        progress.append(out.read_bytes().count(b"\n"))
    assert kills >= 3, "the run finished before it could be killed; use a larger input"
    assert all(0 < rows < 5000 for rows in progress), progress
    finish = score(str(source), "-o", str(out), "--grader", "math", "--batch", "64")
    assert finish.returncode == 0, finish.stderr

    expected = reference.read_text().splitlines()
    got = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in got] == list(range(5000))
    assert got == expected
    summary = json.loads((tmp_path / "killed.summary.json").read_text())
    reference_summary = json.loads((tmp_path / "reference.summary.json").read_text())
    assert summary["overall"] == reference_summary["overall"]
    assert summary["grader"]["name"] == "math" and summary["grader"]["config_hash"]
    manifest = json.loads((tmp_path / "killed.run.json").read_text())
    assert manifest["grader"]["config_hash"] == summary["grader"]["config_hash"]


def test_a_rerun_with_another_grader_refuses_to_mix_rewards(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(20))
    out = tmp_path / "o.jsonl"
    assert score(str(source), "-o", str(out), "--grader", "math").returncode == 0
    first = out.read_text()
    again = score(str(source), "-o", str(out), "--grader", "math")  # complete: nothing rescored
    assert again.returncode == 0 and out.read_text() == first
    other = score(str(source), "-o", str(out), "--grader", "format")
    assert other.returncode == 2 and "another run" in other.stderr
    assert out.read_text() == first
    fresh = score(str(source), "-o", str(out), "--grader", "format", "--overwrite")
    assert fresh.returncode == 0 and out.read_text() != first
    assert len(out.read_text().splitlines()) == 20
