"""`/run_code` as SandboxFusion behaves: wall-clock limits, files in
and out, `language` required, its own workers with a bounded queue, and a run whose caller hung up
killed. Served by reward_rules built through the catalog (as `arbiter serve` builds it), on
loopback, over plain HTTP. Verdicts and orderings only: no test asserts on a duration (the few
waits below are generous bounds on something that otherwise takes a minute)."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from services.catalog import make_server
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.run_code import FusionRunner, RunCodeRequest
from services.reward_rules.run_code_api import FusionRouter
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.reward_rules.code_fixtures import fenced


def body(code: str, language: str | None = "python", timeout: float = 25, **extra: Any) -> dict[str, Any]:
    """veRL 0.9.1's body (call_sandbox_api), with SandboxFusion's files and fetch_files. The limits
    are wall-clock: the default leaves a program that should finish room on a loaded machine."""
    data: dict[str, Any] = {
        "compile_timeout": timeout,
        "run_timeout": timeout,
        "code": code,
        "stdin": "",
        "memory_limit_MB": 256,
        "language": language,
        "files": {},
        "fetch_files": [],
        **extra,
    }
    if language is None:
        del data["language"]
    return data


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
async def rules() -> AsyncIterator[GraderServer]:
    code = {
        "workers": 1,
        "warm_sandboxes": 2,
        "run_code_workers": 2,
        "run_code_queue": 1,
        "run_code_max_wait_s": 60,
        "run_code_max_files": 8,
        "run_code_files_mb": 1,
    }
    settings = ArbiterSettings.model_validate(
        {"reward_rules": {"host": "127.0.0.1", "http_port": 0, "grpc_port": -1, "code": code}}
    )
    async with make_server("reward_rules", settings) as server:
        yield server


def runner_of(server: GraderServer) -> FusionRunner:
    router = next(r for r in server.routers if isinstance(r, FusionRouter))
    assert router.runner is not None
    return router.runner


async def post(server: GraderServer, data: dict[str, Any], limit_s: float = 90) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{server.http_url}/run_code", json=data, timeout=limit_s)


async def run_code(server: GraderServer, data: dict[str, Any]) -> dict[str, Any]:
    response = await post(server, data)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def until(condition: Any, bound_s: float = 30.0) -> None:
    """Polls `condition()` until it holds; fails past a generous bound."""
    end = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < end, "the condition never held"
        await asyncio.sleep(0.05)


# ------------------------------------------------------------------ language is required


async def test_a_request_without_language_is_a_422(rules: GraderServer) -> None:
    response = await post(rules, body("print(1)", language=None))
    assert response.status_code == 422, response.text
    assert "language" in response.text


# ------------------------------------------------------------------ wall-clock limits


async def test_a_program_that_sleeps_past_run_timeout_is_time_limit_exceeded(rules: GraderServer) -> None:
    """As in SandboxFusion (and veRL's -3): the limit is the wall clock, not CPU time."""
    slept = await run_code(rules, body("import time\ntime.sleep(4)\nprint('done')", timeout=1))
    assert slept["status"] == "Failed"
    run = slept["run_result"]
    assert run["status"] == "TimeLimitExceeded" and run["return_code"] is None, run
    assert run["stdout"] == ""
    assert isinstance(run["execution_time"], float)
    quick = await run_code(rules, body("import time\ntime.sleep(0.05)\nprint('done')"))
    assert quick["status"] == "Success" and quick["run_result"]["stdout"] == "done\n", quick


async def test_a_busy_program_past_run_timeout_is_time_limit_exceeded(rules: GraderServer) -> None:
    spun = await run_code(rules, body("while True: pass", timeout=1))
    assert (spun["status"], spun["run_result"]["status"]) == ("Failed", "TimeLimitExceeded")
    assert spun["run_result"]["return_code"] is None


# ------------------------------------------------------------------ files and fetch_files

FILES_PROGRAM = """import os
print(open('a.txt').read(), open('data/b.txt').read(), os.path.exists('skipped.txt'))
with open('out.txt', 'w') as handle:
    handle.write('written ' + open('a.txt').read())
os.makedirs('res', exist_ok=True)
open('res/deep.bin', 'wb').write(bytes(range(256)))
"""


async def test_files_go_in_and_fetch_files_come_back(rules: GraderServer) -> None:
    files = {"a.txt": b64("alpha"), "./data/b.txt": b64("beta"), "skipped.txt": None}
    fetch = ["out.txt", "res/deep.bin", "missing.txt", "out.txt"]
    data = await run_code(rules, body(FILES_PROGRAM, files=files, fetch_files=fetch))
    assert data["status"] == "Success", data
    assert data["run_result"]["stdout"] == "alpha beta False\n"
    assert set(data["files"]) == {"out.txt", "res/deep.bin"}  # a missing file is left out
    assert base64.b64decode(data["files"]["out.txt"]) == b"written alpha"
    assert base64.b64decode(data["files"]["res/deep.bin"]) == bytes(range(256))


async def test_absolute_paths_in_the_run_s_directory_are_its_files(rules: GraderServer) -> None:
    """The run's directory is the sandbox's /tmp (the program's working directory): `/tmp/x` is `x`."""
    program = "import os\nprint(os.getcwd(), open('in.txt').read())\nopen('/tmp/out.txt', 'w').write('o')"
    files = {"/tmp/in.txt": b64("i")}
    data = await run_code(rules, body(program, files=files, fetch_files=["/tmp/out.txt", "out.txt"]))
    assert data["run_result"]["stdout"] == "/tmp i\n", data
    assert {name: base64.b64decode(text) for name, text in data["files"].items()} == {
        "/tmp/out.txt": b"o",
        "out.txt": b"o",
    }


async def test_files_are_fetched_after_a_failed_run_too(rules: GraderServer) -> None:
    program = "open('log.txt', 'w').write('partial')\nraise SystemExit(2)"
    data = await run_code(rules, body(program, fetch_files=["log.txt"]))
    assert data["status"] == "Failed" and data["run_result"]["return_code"] == 2
    assert base64.b64decode(data["files"]["log.txt"]) == b"partial"


@pytest.mark.parametrize(
    "field",
    [
        {"files": {"/etc/evil": b64("x")}},
        {"files": {"../up.txt": b64("x")}},
        {"files": {"a/../../up.txt": b64("x")}},
        {"files": {"a//b": b64("x")}},
        {"files": {".stdin": b64("x")}},
        {"files": {"a.txt": "not base64!"}},
        {"files": {f"f{i}": b64("x") for i in range(9)}},  # over run_code_max_files (8)
        {"files": {"big": base64.b64encode(bytes(2 << 20)).decode()}},  # over run_code_files_mb (1)
        {"files": {"d": b64("x"), "d/e": b64("y")}},  # a file used as a directory
        {"fetch_files": ["/etc/passwd"]},
        {"fetch_files": ["../../etc/passwd"]},
        {"fetch_files": ["/tmp/../etc/passwd"]},
        {"files": {"/tmp": b64("x")}},
        {"fetch_files": [f"f{i}" for i in range(9)]},
    ],
)
async def test_paths_out_of_the_run_s_directory_and_oversized_files_are_refused(
    rules: GraderServer, field: dict[str, Any]
) -> None:
    response = await post(rules, body("print(1)", **field))
    assert response.status_code == 422, response.text


async def test_fetch_never_follows_a_symlink_out(rules: GraderServer) -> None:
    """A program that links its outputs to the sandbox's other files (or the harness's own /proc
    entries) gets nothing through them."""
    program = (
        "import os\n"
        "os.symlink('/etc/passwd', 'passwd')\n"
        "os.symlink('/proc/self', 'me')\n"
        "os.symlink('/', 'root')\n"
        "os.mkfifo('pipe')\n"
        "open('ok.txt', 'w').write('ok')\n"
    )
    fetch = ["passwd", "me/environ", "me/fd/0", "root/etc/passwd", "pipe", "ok.txt"]
    data = await run_code(rules, body(program, fetch_files=fetch))
    assert data["status"] == "Success", data
    assert set(data["files"]) == {"ok.txt"}


async def test_uploads_never_write_through_a_symlink(rules: GraderServer) -> None:
    """Uploads go into a clean directory: whatever an earlier run of a reused sandbox left is gone."""
    leave = "import os\nos.symlink('/tmp/../etc', 'data')\nos.symlink('/dev/null', 'a.txt')"
    assert (await run_code(rules, body(leave)))["status"] == "Success"
    files = {"a.txt": b64("alpha"), "data/b.txt": b64("beta")}
    data = await run_code(rules, body(FILES_PROGRAM, files=files))
    assert data["run_result"]["stdout"] == "alpha beta False\n", data


async def test_fetched_files_are_bounded(rules: GraderServer) -> None:
    program = "open('big.bin', 'wb').write(bytes(3 << 19))\nopen('small.txt', 'w').write('s')"
    data = await run_code(rules, body(program, fetch_files=["big.bin", "small.txt"]))
    assert data["status"] == "Success"
    assert set(data["files"]) == {"small.txt"}
    assert "big.bin" in data["message"]


# ------------------------------------------------------------------ its own workers


HONEST = '{"grader": "code", "tests": {"kind": "stdio", "cases": [{"input": "2\\n", "output": "4\\n"}]}}'


async def test_sleeping_run_code_calls_do_not_delay_a_graded_sample(rules: GraderServer) -> None:
    """The grader has one worker, /run_code two slots of its own: with both /run_code slots held by
    sleeping programs, an honest graded sample is answered while they still sleep. (When they shared
    the grader's workers, the sample waited for them.)"""
    runner = runner_of(rules)
    sleepers = [
        asyncio.ensure_future(post(rules, body("import time\ntime.sleep(25)", timeout=28))) for _ in range(2)
    ]
    await until(lambda: runner.slots.busy == 2)
    sample = {"prompt": "", "response": fenced("print(int(input()) * 2)"), "label": HONEST}
    async with httpx.AsyncClient() as client:
        scored = await client.post(f"{rules.http_url}/v1/score", json={"samples": [sample]}, timeout=90)
    assert scored.status_code == 200, scored.text
    (result,) = scored.json()["results"]
    assert result["reward"] == 1.0, result
    assert not any(task.done() for task in sleepers)  # answered while both sleepers still ran
    for task in sleepers:
        task.cancel()
    await asyncio.gather(*sleepers, return_exceptions=True)
    await until(lambda: runner.slots.busy == 0)  # hung up: killed, not left to sleep on


async def test_a_full_queue_is_refused_at_once_with_504(rules: GraderServer) -> None:
    """Two slots, one waiting place: a fourth request gets 504 (veRL's client retries on 504)."""
    runner = runner_of(rules)
    sleepers = [
        asyncio.ensure_future(post(rules, body("import time\ntime.sleep(25)", timeout=28))) for _ in range(3)
    ]
    await until(lambda: runner.slots.busy == 2 and runner.slots.queued == 1)
    refused = await post(rules, body("print(1)"))
    assert refused.status_code == 504, refused.text
    assert not any(task.done() for task in sleepers)
    for task in sleepers:
        task.cancel()
    await asyncio.gather(*sleepers, return_exceptions=True)
    await until(lambda: runner.slots.busy == 0 and runner.slots.queued == 0)


async def test_a_run_whose_caller_hung_up_is_killed(rules: GraderServer) -> None:
    """The caller leaves; its sleeping run (a minute of run_timeout) is killed, its slot freed."""
    runner = runner_of(rules)
    sleeper = asyncio.ensure_future(post(rules, body("import time\ntime.sleep(55)", timeout=58)))
    await until(lambda: runner.slots.busy == 1)
    sleeper.cancel()
    await asyncio.gather(sleeper, return_exceptions=True)
    await until(lambda: runner.slots.busy == 0)
    after = await run_code(rules, body("print(6 * 7)"))
    assert after["run_result"]["stdout"] == "42\n"


@pytest.mark.parametrize("language", ["python", "cpp", "go", "bash"])
@pytest.mark.parametrize(("compile_s", "run_s"), [(10, 10), (1, 1), (5, 30), (60, 60), (0.5, 20)])
def test_a_wait_and_a_run_fit_in_veRL_s_http_timeout(language: str, compile_s: float, run_s: float) -> None:
    """What a request may wait for a slot and what its run may take once started (past that it is
    killed and answered) stay 2 s inside veRL's timeout, compile + run + 10 s, for any limits."""
    runner = FusionRunner(CodeGrader(CodeConfig()))
    request = RunCodeRequest(code="", language=language, compile_timeout=compile_s, run_timeout=run_s)
    verl_timeout = compile_s + run_s + 10
    assert runner._wait_allowed(request) + runner._time_allowed(request) <= verl_timeout - 2
    assert runner._wait_allowed(request) >= CodeConfig().run_code_max_wait_s
