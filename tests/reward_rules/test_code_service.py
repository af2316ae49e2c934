"""The code grader behind the real kit server, and the SandboxFusion backend against a small
real HTTP server speaking SandboxFusion's /run_code protocol (a double: no SandboxFusion here)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from services.common.settings import CacheSettings
from services.reward_rules.code import CodeConfig, CodeGrader
from services.transports.server import GraderServer
from tests.helpers import server_settings
from tests.reward_rules.code_fixtures import asserts, call, check, stdio


async def test_get_reward_over_http() -> None:
    grader = CodeGrader(CodeConfig(workers=2, warm_sandboxes=2))
    sample = stdio("print(sum(map(int, input().split())))", [("1 2\n", "3\n")])
    body = {"query": [sample.response], "prompts": [""], "labels": [sample.label]}
    async with (
        GraderServer("code", grader, server_settings(), CacheSettings()) as server,
        httpx.AsyncClient() as client,
    ):
        response = await client.post(f"{server.http_url}/get_reward", json=body, timeout=60)
    assert response.status_code == 200
    data = response.json()
    assert data["rewards"] == [1.0] and data["extra_logs"]["code/passed"] == [1.0]


class _RunCode(BaseHTTPRequestHandler):
    """POST /run_code: runs `code` with python as SandboxFusion would, answers its JSON shape."""

    calls: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(body)
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", body["code"]],
                input=body.get("stdin", ""),
                capture_output=True,
                text=True,
                timeout=float(body.get("run_timeout", 10)),
            )
            run = {
                "status": "Finished",
                "return_code": done.returncode,
                "stdout": done.stdout,
                "stderr": done.stderr,
            }
        except subprocess.TimeoutExpired:
            run = {"status": "TimeLimitExceeded", "return_code": None, "stdout": "", "stderr": ""}
        payload = json.dumps({"status": "Success", "message": "", "run_result": run}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture()
def sandboxfusion_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RunCode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_sandboxfusion_backend_scores_every_format(sandboxfusion_url: str) -> None:
    grader = CodeGrader(CodeConfig(backend="sandboxfusion", sandboxfusion_url=sandboxfusion_url, workers=2))
    add = "def add(a, b):\n    return a + b\n"
    eq = "class E:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return E()\n"
    test = "def check(candidate):\n    assert candidate(1, 2) == 3\n"
    samples = [
        stdio("print(sum(map(int, input().split())))", [("1 2\n", "3\n"), ("2 2\n", "5\n")]),
        asserts(add, "add", ["assert add(1, 2) == 3"]),
        check(add, "add", test),
        check(eq, "add", test),
        call(add, "add", [([1, 2], 3)]),
        stdio("while True:\n    pass\n", [("", "1\n")], time_limit_s=0.5),
    ]
    try:
        results = asyncio.run(grader.score(samples))
    finally:
        asyncio.run(grader.aclose())
    assert [r.score for r in results] == [0.5, 1.0, 1.0, 0.0, 1.0, 0.0], [r.detail for r in results]
    assert "timeout" in results[5].detail
    assert any(c.get("stdin") == "1 2\n" for c in _RunCode.calls)


def test_without_bubblewrap_the_service_serves_the_other_graders(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from arbiter.contract import Result, Sample, Status
    from services.reward_rules import build
    from services.reward_rules.settings import RulesServiceSettings

    monkeypatch.setenv("PATH", str(tmp_path))  # a machine where `bwrap` is not found
    rules = build.build_grader(RulesServiceSettings())

    async def run() -> list[Result]:
        try:
            return await rules.score(
                [
                    Sample(response="<think>a</think> \\boxed{4}", label='{"grader": "math", "answer": "4"}'),
                    Sample(
                        response="print(1)",
                        label='{"grader": "code", "tests": {"kind": "stdio", "cases": []}}',
                    ),
                ]
            )
        finally:
            await rules.aclose()

    math_result, code_result = asyncio.run(run())
    assert math_result.status is Status.OK and math_result.reward == 1.0
    assert code_result.status is Status.GRADER_ERROR
    assert "bubblewrap" in code_result.detail
