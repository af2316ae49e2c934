"""`arbiter score`'s start-up: the CLI loads no service until a command runs, and the math
grader's fork server starts before the services load, then serves the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services import catalog, cli
from services.reward_rules.math import pool
from tests.evaluate.rows import math_rows, write_jsonl


def test_the_cli_names_every_service_of_the_catalog() -> None:
    assert tuple(catalog.SERVICES) == cli.SERVICE_NAMES


def test_loading_the_cli_loads_no_service() -> None:
    code = (
        "import json, sys, services.cli\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('services'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == ["services", "services.cli"]


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["score", "in.jsonl", "-o", "out.jsonl"], True),  # reward_rules: math takes reference answers
        (["score", "in.jsonl", "--grader", "math", "-o", "out.jsonl"], True),
        (["score", "in.jsonl", "--grader=math"], True),
        (["score", "in.jsonl", "--grader", "code"], False),
        (["score", "in.jsonl", "--grader=format"], False),
        (["score", "in.jsonl", "--grader", "math", "--url", "http://host:8101"], False),
        (["score", "in.jsonl", "--ray"], False),
        (["score", "in.jsonl", "--ray-address=auto", "--grader", "math"], False),
        (["serve", "reward_rules"], False),
        ([], False),
    ],
)
def test_the_math_fork_server_starts_before_parsing_only_where_it_will_serve(
    args: list[str], starts: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(pool, "prestart", lambda: calls.append(None))
    cli._prestart_math(args)
    assert calls == ([None] if starts else [])


def test_math_scoring_with_a_prestarted_fork_server_matches_the_grader(tmp_path: Path) -> None:
    """The fork server started before the services load is the one the grader's pool uses."""
    source = write_jsonl(tmp_path / "eval.jsonl", math_rows(40))
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "score", str(source), "-o", str(out), "--grader", "math"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == list(range(40))
    assert {r["status"] for r in records} == {"OK"}
    # math_rows: kind 1 boxes a wrong answer; the others state the right one (boxed, as an equal
    # fraction, or as the last number)
    expected = [0.0 if (i // 4 + i % 4) % 4 == 1 else 1.0 for i in range(40)]
    assert [r["reward"] for r in records] == expected
