"""The `arbiter` command as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.helpers import free_port

ARBITER = [sys.executable, "-m", "services.cli"]


def run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ARBITER, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def test_score_writes_every_row_back_in_order(tmp_path: Path) -> None:
    rows = [
        {"prompt": "p", "response": "<think>a</think> 4", "label": "", "id": 1},
        {"prompt": "p", "response": "4", "label": "", "id": 2},
        "not an object",
        {"prompt": "p", "label": "", "id": 4},  # no response
        {"question": "q", "answer": "<think>b</think> 5", "ref": {"grader": "format"}, "id": 5},
    ]
    source = tmp_path / "in.jsonl"
    with source.open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
        handle.write("{broken json\n\n")
    out = tmp_path / "out.jsonl"
    done = run("score", str(source), "-o", str(out), "--grader", "format")
    assert done.returncode == 0, done.stderr
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == 6
    assert [w.get("id") for w in written[:2]] == [1, 2]
    assert [w["reward"] for w in written[:2]] == [1.0, 0.0]
    assert [w["status"] for w in written] == ["OK", "OK"] + ["INVALID_INPUT"] * 4
    assert "response" in written[3]["detail"] and "not JSON" in written[5]["detail"]
    assert all("reflect/wait" in w["logs"] for w in written)
    assert "mean reward" in done.stderr and "format" in done.stderr  # the summary table

    remapped = tmp_path / "out2.jsonl"
    done = run(
        "score",
        str(source),
        "-o",
        str(remapped),
        "--grader",
        "format",
        "--prompt-key",
        "question",
        "--response-key",
        "answer",
        "--label-key",
        "ref",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(remapped.read_text().splitlines()[4])["reward"] == 1.0


def test_score_rejects_an_unknown_grader(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"response": "x"}\n')
    done = run("score", str(source), "-o", str(tmp_path / "o.jsonl"), "--grader", "nope")
    assert done.returncode == 2 and "unknown grader 'nope'" in done.stderr


def test_serve_all_prints_addresses_answers_and_stops_on_sigint(tmp_path: Path) -> None:
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "ARBITER_REWARD_RULES__HTTP_PORT": str(http_port),
        "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc_port),
        "ARBITER_GATEWAY__HTTP_PORT": str(free_port()),
        "ARBITER_GATEWAY__GRPC_PORT": str(free_port()),
    }
    proc = subprocess.Popen([*ARBITER, "serve"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{http_port}"
        for _ in range(300):
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        reply = httpx.post(f"{url}/get_reward", json={"query": ["<think>a</think> b"], "prompts": [""]})
        assert reply.status_code == 200 and reply.json()["rewards"] == [1.0]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        stderr = proc.stderr.read() if proc.stderr else ""
        assert f"http://127.0.0.1:{http_port}" in stderr and f"127.0.0.1:{grpc_port}" in stderr
        assert "--reward.remote_url" in stderr
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_reports_a_busy_port_and_unknown_services() -> None:
    done = run("serve", "nonexistent")
    assert done.returncode == 2 and "unknown service" in done.stderr
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run("serve", "reward_rules", env={"ARBITER_REWARD_RULES__HTTP_PORT": str(port)}, timeout=60)
    assert done.returncode == 1 and "cannot start" in done.stderr


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("reward_rules:\n  http_port: -5\n")
    done = run("serve", "--config", str(config))
    assert done.returncode == 2 and "http_port" in done.stderr


def test_check_probes_a_running_service() -> None:
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "ARBITER_REWARD_RULES__HTTP_PORT": str(http_port),
        "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc_port),
    }
    proc = subprocess.Popen([*ARBITER, "serve", "reward_rules"], env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{http_port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        done = run(
            "check",
            f"http://127.0.0.1:{http_port}/get_reward",
            "--label",
            '{"grader": "math", "answer": "42"}',
        )
        assert done.returncode == 0, done.stderr
        assert "OK" in done.stderr and "reward 1" in done.stderr and "math/boxed" in done.stderr
        wrong = run("check", f"grpc://127.0.0.1:{grpc_port}", "--label", '{"grader": "nope"}')
        assert wrong.returncode == 1 and "INVALID_INPUT" in wrong.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    down = run("check", f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 1 and "FAILED" in down.stderr


def test_compare_of_a_summary_with_string_ks_is_a_clear_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from services.cli import app

    summary = {"overall": {"pass@1": 0.5}, "by_datasource": {}, "ks": [1, 8]}
    (tmp_path / "a.summary.json").write_text(json.dumps(summary))
    (tmp_path / "b.summary.json").write_text(json.dumps({**summary, "ks": "1,8"}))  # hand-edited
    done = CliRunner().invoke(
        app, ["compare", str(tmp_path / "a.summary.json"), str(tmp_path / "b.summary.json")]
    )
    assert done.exit_code == 2, done.output
    assert not isinstance(done.exception, TypeError)
