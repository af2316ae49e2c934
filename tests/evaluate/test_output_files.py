"""The eval tools never write over an input, a link, or a file they did not create.

Before: `arbiter score X -o X` emptied X, an unrelated JSONL given as `-o` was silently emptied
(exit 0), an input named `run.summary.json` was replaced by the summary of `-o run.jsonl`, `-o`
followed symlinks, `rm-eval -o` truncated its own input, CSV fields over 131,072 characters
aborted the run, and NaN in an input row came back as a bare `NaN` token (not JSON).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.evaluate.rm_eval import PairsJob, check_rm_eval_files
from services.evaluate.targets import UnsafeOutput
from tests.evaluate.rows import math_rows, write_jsonl

ARBITER = [sys.executable, "-m", "services.cli"]


def arbiter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARBITER, *args], capture_output=True, text=True, timeout=180)


def score(source: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return arbiter("score", str(source), "-o", str(out), "--grader", "math", *extra)


def strict(line: str) -> object:
    def refuse(token: str) -> object:
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(line, parse_constant=refuse)


def test_output_equal_to_the_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(12))
    before = source.read_bytes()
    for extra in ((), ("--overwrite",)):
        done = score(source, source, *extra)
        assert done.returncode == 2 and "is the input" in done.stderr, done.stderr
        assert source.read_bytes() == before
    (tmp_path / "link.jsonl").hardlink_to(source)
    done = score(source, tmp_path / "link.jsonl")
    assert done.returncode == 2 and source.read_bytes() == before


def test_an_existing_file_arbiter_did_not_write_is_never_emptied(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(12))
    precious = tmp_path / "results.jsonl"
    precious.write_text('{"mine": 1}\n{"mine": 2}\n')
    for extra in ((), ("--overwrite",)):
        done = score(source, precious, *extra)
        assert done.returncode == 2 and "not written by arbiter score" in done.stderr, done.stderr
        assert precious.read_text() == '{"mine": 1}\n{"mine": 2}\n'
    assert not (tmp_path / "results.run.json").exists()


def test_an_input_named_like_the_summary_is_not_overwritten(tmp_path: Path) -> None:
    rows = math_rows(8)
    source = tmp_path / "run.summary.json"
    source.write_text(json.dumps(rows))
    before = source.read_bytes()
    done = arbiter("score", str(source), "-o", str(tmp_path / "run.jsonl"), "--grader", "math")
    assert done.returncode == 2 and "is the input" in done.stderr, done.stderr
    assert source.read_bytes() == before
    assert not (tmp_path / "run.jsonl").exists()  # refused before any row was written
    # A foreign file where the summary or report would go is refused too, before scoring.
    other = write_jsonl(tmp_path / "eval.jsonl", rows)
    (tmp_path / "x.report.html").write_text("<p>my notes</p>")
    done = score(other, tmp_path / "x.jsonl")
    assert done.returncode == 2 and "report" in done.stderr
    assert (tmp_path / "x.report.html").read_text() == "<p>my notes</p>"
    assert not (tmp_path / "x.jsonl").exists()


def test_symlinked_outputs_are_refused_not_followed(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(8))
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    (tmp_path / "out.jsonl").symlink_to(target)
    done = score(source, tmp_path / "out.jsonl")
    assert done.returncode == 2 and "symbolic link" in done.stderr, done.stderr
    assert target.read_text() == "keep me\n"
    (tmp_path / "s.json").symlink_to(target)
    done = score(source, tmp_path / "o.jsonl", "--summary", str(tmp_path / "s.json"))
    assert done.returncode == 2 and "symbolic link" in done.stderr
    assert target.read_text() == "keep me\n"


def test_own_files_are_resumed_and_rewritten_and_old_run_records_still_resume(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(40))
    out = tmp_path / "o.jsonl"
    assert score(source, out).returncode == 0
    full = out.read_text()
    assert (tmp_path / "o.run.json").exists() and not (tmp_path / "o.jsonl.run.json").exists()
    # A run started by an older version: the record under its old name, half the rows written.
    (tmp_path / "o.run.json").rename(tmp_path / "o.jsonl.run.json")
    out.write_text("".join(full.splitlines(keepends=True)[:15]))
    done = score(source, out)
    assert done.returncode == 0 and "15 of 40 rows already scored" in done.stderr, done.stderr
    assert out.read_text() == full
    again = score(source, out)  # the summary and report it wrote are its own: rewritten
    assert again.returncode == 0 and out.read_text() == full


def test_rm_eval_never_writes_over_its_input_or_foreign_files(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "p", "chosen": "a", "rejected": "b"}) + "\n")
    before = pairs.read_bytes()
    done = arbiter("rm-eval", str(pairs), "-o", str(pairs), "--checkpoint", str(tmp_path / "none"))
    assert done.returncode == 2 and "is the input" in done.stderr, done.stderr
    assert pairs.read_bytes() == before
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text('{"x": 1}\n')
    with pytest.raises(UnsafeOutput, match="not written by arbiter rm-eval"):
        check_rm_eval_files(PairsJob(pairs, output=foreign, overwrite=True))
    own = tmp_path / "scored.jsonl"
    own.write_text(
        json.dumps({"line": 1, "subset": "s", "chosen_reward": 1, "rejected_reward": 0, "correct": True})
        + "\n"
    )
    with pytest.raises(UnsafeOutput, match="--overwrite"):
        check_rm_eval_files(PairsJob(pairs, output=own, overwrite=False))
    check_rm_eval_files(PairsJob(pairs, output=own, overwrite=True))
    os.symlink(foreign, tmp_path / "link.json")
    with pytest.raises(UnsafeOutput, match="symbolic link"):
        check_rm_eval_files(PairsJob(pairs, summary=tmp_path / "link.json", overwrite=True))


def test_csv_fields_longer_than_pythons_default_limit_are_scored(tmp_path: Path) -> None:
    rows = math_rows(4)
    rows[1]["response"] = "Let me think. " * 20_000 + "\\boxed{1}"  # 280,000 characters
    with (tmp_path / "in.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = score(tmp_path / "in.csv", tmp_path / "o.jsonl", "--no-report")
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert len(got) == 4 and got[1]["response"] == rows[1]["response"] and got[1]["status"] == "OK"


def test_nan_and_infinity_in_input_rows_come_back_as_strict_json(tmp_path: Path) -> None:
    rows = math_rows(3)
    lines = [json.dumps(r)[:-1] + ', "temp": NaN, "hi": Infinity, "lo": [-Infinity]}' for r in rows]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    done = score(tmp_path / "in.jsonl", tmp_path / "o.jsonl")
    assert done.returncode == 0, done.stderr
    got = [strict(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [(r["temp"], r["hi"], r["lo"]) for r in got] == [("NaN", "Infinity", ["-Infinity"])] * 3  # type: ignore[index]
    strict((tmp_path / "o.summary.json").read_text())


def test_compare_refuses_to_write_its_report_over_a_run(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(8))
    assert score(source, tmp_path / "a.jsonl", "--no-report").returncode == 0
    summary = tmp_path / "a.summary.json"
    before = summary.read_bytes()
    done = arbiter("compare", str(tmp_path / "a.jsonl"), str(summary), "--html", str(summary))
    assert done.returncode == 2 and "is the input" in done.stderr, done.stderr
    done = arbiter("compare", str(tmp_path / "a.jsonl"), str(tmp_path / "a.jsonl"), "--json", str(source))
    assert done.returncode == 2 and "not written by arbiter compare" in done.stderr
    assert summary.read_bytes() == before
