"""SandboxFusion's `POST /run_code`, served by reward_rules (built through the catalog, as `arbiter
serve` builds it) on loopback, driven over plain HTTP with the body veRL 0.9.1 sends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from services.catalog import make_server
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer


def verl_body(
    code: str, language: str = "python", stdin: str | None = "", timeout: int = 20
) -> dict[str, Any]:
    """What verl.utils.reward_score.sandbox_fusion.utils.call_sandbox_api posts (its limits are
    wall-clock: room for a program that should finish on a loaded machine)."""
    return {
        "compile_timeout": timeout,
        "run_timeout": timeout,
        "code": code,
        "stdin": stdin,
        "memory_limit_MB": 256,
        "language": language,
        "files": {},
        "fetch_files": [],
    }


@pytest.fixture
async def rules() -> AsyncIterator[GraderServer]:
    settings = ArbiterSettings.model_validate(
        {
            "reward_rules": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": -1,
                "code": {"workers": 3, "warm_sandboxes": 2, "compile_time_limit_s": 30},
            }
        }
    )
    async with make_server("reward_rules", settings) as server:
        yield server


async def run_code(server: GraderServer, body: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.http_url}/run_code", json=body, timeout=60)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    assert set(data) >= {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
    return data


CPP_SUM = '#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<"\\n";return 0;}\n'


async def test_python_and_cpp_runs(rules: GraderServer) -> None:
    data = await run_code(
        rules, verl_body("import sys\nprint(sum(map(int, sys.stdin.read().split())))", stdin="2 3")
    )
    assert data["status"] == "Success" and data["compile_result"] is None
    run = data["run_result"]
    assert (run["status"], run["return_code"], run["stdout"]) == ("Finished", 0, "5\n")
    assert isinstance(run["execution_time"], float)

    # compile_timeout is wall-clock (as in SandboxFusion): room for a first compile on a busy machine
    data = await run_code(rules, verl_body(CPP_SUM, "cpp", "40 2", timeout=30))
    assert data["status"] == "Success"
    assert (data["compile_result"]["status"], data["compile_result"]["return_code"]) == ("Finished", 0)
    assert (data["run_result"]["status"], data["run_result"]["stdout"]) == ("Finished", "42\n")


async def test_failures_as_verl_classifies_them(rules: GraderServer) -> None:
    crashed = await run_code(rules, verl_body("import sys\nsys.stderr.write('boom\\n')\nraise SystemExit(3)"))
    assert crashed["status"] == "Failed"
    assert (crashed["run_result"]["status"], crashed["run_result"]["return_code"]) == ("Finished", 3)
    assert "boom" in crashed["run_result"]["stderr"]

    slow = await run_code(rules, verl_body("while True: pass", timeout=1))
    assert (slow["status"], slow["run_result"]["status"]) == ("Failed", "TimeLimitExceeded")

    broken = await run_code(rules, verl_body("int main() { return x; }", "cpp", timeout=30))
    assert broken["status"] == "Failed" and broken["run_result"] is None
    compiled = broken["compile_result"]
    assert compiled["status"] == "Finished" and compiled["return_code"] != 0 and "x" in compiled["stderr"]

    hostile = await run_code(rules, verl_body("#include </dev/zero>\nint main(){}", "cpp", timeout=2))
    assert hostile["status"] == "Failed" and hostile["run_result"] is None

    hog = "x = bytearray(1 << 30)\nprint(len(x))"
    memory = await run_code(rules, verl_body(hog))
    assert memory["status"] == "Failed" and memory["run_result"]["return_code"] != 0


async def test_the_sandbox_isolates(rules: GraderServer) -> None:
    """No host files, no network: the service's own port on loopback is out of reach."""
    port = int(rules.http_url.rsplit(":", 1)[1])
    probe = (
        "import os, socket\nprint(os.path.exists('/work'))\ntry:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), 1)\n"
        "    print('net')\nexcept OSError:\n    print('no net')\n"
    )
    data = await run_code(rules, verl_body(probe))
    assert data["run_result"]["stdout"] == "False\nno net\n"


async def test_unsupported_languages_are_clear_errors(rules: GraderServer) -> None:
    cobol = await run_code(rules, verl_body("IDENTIFICATION DIVISION.", "cobol"))
    assert cobol["status"] == "SandboxError" and "python" in cobol["message"] and "cpp" in cobol["message"]
    assert cobol["run_result"] is None


async def test_with_a_token_run_code_takes_it_in_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """veRL sends no Authorization header: a service with a token serves /run_code/<token>, and
    only with that token; every other route still wants the header."""
    monkeypatch.setenv("ARBITER_TEST_RUN_CODE_TOKEN", "s3cret-token")
    settings = ArbiterSettings.model_validate(
        {
            "reward_rules": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": -1,
                "auth_token_env": "ARBITER_TEST_RUN_CODE_TOKEN",
                "code": {"workers": 1, "warm_sandboxes": 1},
            }
        }
    )
    body = verl_body("print(6 * 7)")
    async with make_server("reward_rules", settings) as server, httpx.AsyncClient() as client:
        base = server.http_url
        ok = await client.post(f"{base}/run_code/s3cret-token", json=body, timeout=60)
        assert ok.status_code == 200 and ok.json()["run_result"]["stdout"] == "42\n", ok.text
        for path in ("/run_code", "/run_code/wrong", "/run_code/s3cret-token/x", "/run_code/s3cret-tokenx"):
            denied = await client.post(f"{base}{path}", json=body, timeout=60)
            assert denied.status_code == 401, (path, denied.text)
        header = {"Authorization": "Bearer s3cret-token"}
        assert (
            await client.post(f"{base}/run_code", json=body, headers=header, timeout=60)
        ).status_code == 200
        score = {"samples": [{"prompt": "", "response": "42", "label": "42"}]}
        assert (await client.post(f"{base}/v1/score/s3cret-token", json=score)).status_code == 401
        assert (await client.post(f"{base}/v1/score", json=score)).status_code == 401
