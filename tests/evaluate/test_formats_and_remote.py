"""JSON, CSV and Parquet inputs score like JSONL; a deployment (HTTP and gRPC) like in-process."""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.reward_rules.math.grader import MathConfig, MathGrader
from services.transports.server import GraderServer
from tests.evaluate.rows import math_rows, write_jsonl
from tests.helpers import server_settings

ARBITER = [sys.executable, "-m", "services.cli"]


def score(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARBITER, "score", *args], capture_output=True, text=True, timeout=180)


def rewards(path: Path) -> list[tuple[int, float, str]]:
    return [
        (r["id"] if isinstance(r["id"], int) else int(r["id"]), r["reward"], r["status"])
        for r in map(json.loads, path.read_text().splitlines())
    ]


def test_every_input_format_gives_the_same_results(tmp_path: Path) -> None:
    rows = math_rows(40)
    write_jsonl(tmp_path / "in.jsonl", rows)
    (tmp_path / "in.json").write_text(json.dumps({"data": rows}))
    with (tmp_path / "in.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "in.parquet")
    results = {}
    for suffix in ("jsonl", "json", "csv", "parquet"):
        out = tmp_path / f"out_{suffix}.jsonl"
        done = score(str(tmp_path / f"in.{suffix}"), "-o", str(out), "--grader", "math", "--no-report")
        assert done.returncode == 0, done.stderr
        results[suffix] = rewards(out)
    assert results["jsonl"] == results["json"] == results["csv"] == results["parquet"]
    assert {r for _, r, _ in results["jsonl"]} == {0.0, 1.0}
    summaries = [json.loads((tmp_path / f"out_{s}.summary.json").read_text()) for s in ("jsonl", "csv")]
    assert summaries[0]["overall"] == summaries[1]["overall"]
    assert set(summaries[0]["by_datasource"]) == {"aime", "math500"}


def test_scoring_against_a_deployment_matches_in_process(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", math_rows(200))
    local = tmp_path / "local.jsonl"
    assert score(str(source), "-o", str(local), "--grader", "math", "--no-report").returncode == 0

    async def remote_runs() -> dict[str, subprocess.CompletedProcess[str]]:
        grader = MathGrader(MathConfig(workers=1))
        async with GraderServer("math", grader, server_settings()) as server:
            assert server.grpc_target
            urls = {"http": server.http_url, "grpc": f"grpc://{server.grpc_target}"}
            runs = {}
            for name, url in urls.items():
                out = str(tmp_path / f"{name}.jsonl")
                runs[name] = await asyncio.to_thread(
                    score, str(source), "-o", out, "--url", url, "--no-report"
                )
            return runs

    runs = asyncio.run(remote_runs())
    for name, done in runs.items():
        assert done.returncode == 0, done.stderr
        assert rewards(tmp_path / f"{name}.jsonl") == rewards(local)
        manifest = json.loads((tmp_path / f"{name}.run.json").read_text())
        assert manifest["grader"]["name"] == "math" and manifest["source"].startswith(("http", "grpc"))


def test_an_unreachable_deployment_fails_without_writing_fallback_rows(tmp_path: Path) -> None:
    from tests.helpers import free_port

    source = write_jsonl(tmp_path / "in.jsonl", math_rows(5))
    done = score(str(source), "-o", str(tmp_path / "o.jsonl"), "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 1 and "resume" in done.stderr
    assert not (tmp_path / "o.jsonl").exists() or (tmp_path / "o.jsonl").read_text() == ""
