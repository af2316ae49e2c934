"""A SandboxFusion-compatible `POST /run_code`, served by reward_rules from the code grader's sandboxes.

veRL points `reward.sandbox_fusion.url` (its reward path, `verl.utils.reward_score.sandbox_fusion`)
at a SandboxFusion server's `/run_code`; pointing it here instead is the only change. Request and
response shapes are the ones veRL 0.9.1's client sends and reads (`call_sandbox_api`,
`_process_single_case`): `{code, language, stdin, compile_timeout, run_timeout, memory_limit_MB,
files, fetch_files}` in; `{status: Success | Failed | SandboxError, message, compile_result,
run_result, executor_pod_name, files}` out, each result `{status: Finished | Error |
TimeLimitExceeded, execution_time, return_code, stdout, stderr}`. veRL 0.9.1 calls no other
SandboxFusion endpoint (its reward path runs each test case as one `/run_code`; the release ships
no SandboxFusion tool), so this is the one served.

Every run is one program in a fresh process in a fresh bubblewrap sandbox of the code grader's
pool, under the grader's limits (the request's timeouts and memory are honoured up to the
grader's caps), on the grader's worker threads: the same isolation, seccomp filter, cgroup and
compile cache as graded samples. Python and C++ (g++, the grader's flags, compiled in the
sandbox, cached by source); any other language is a `SandboxError` naming the ones served.
`files` (files to put beside the program) and `fetch_files` are not supported: a request with
any is refused the same way, rather than run without them.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from services.common.auth import PathTokenRouter
from services.common.grader import Grader
from services.reward_rules.code.grader import LANGUAGES, SERVED, CodeGrader
from services.reward_rules.code.languages import toolchain
from services.reward_rules.code.native import prepare_binary
from services.reward_rules.code.session import CandidateFailure, InfrastructureError, Session, StdioRun

RunStatus = Literal["Finished", "Error", "TimeLimitExceeded"]


class RunCodeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    code: str
    language: str = "python"
    stdin: str | None = None
    compile_timeout: float = Field(default=10.0, gt=0)
    run_timeout: float = Field(default=10.0, gt=0)
    memory_limit_mb: int = Field(default=-1, alias="memory_limit_MB")
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


def _command(status: RunStatus, seconds: float, code: int | None, stdout: str, stderr: str) -> dict[str, Any]:
    return {
        "status": status,
        "execution_time": round(seconds, 6),
        "return_code": code,
        "stdout": stdout,
        "stderr": stderr,
    }


def _response(
    status: str, message: str, compile_result: dict[str, Any] | None, run_result: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": compile_result,
        "run_result": run_result,
        "executor_pod_name": None,
        "files": {},
    }


def sandbox_error(message: str) -> dict[str, Any]:
    return _response("SandboxError", message, None, None)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _run_result(run: StdioRun, seconds: float, memory_mb: int) -> dict[str, Any]:
    stdout, stderr = _text(run.stdout), _text(run.stderr)
    if run.timeout:
        return _command("TimeLimitExceeded", seconds, None, stdout, stderr)
    if run.memory_killed:
        note = f"killed: over the memory limit of {memory_mb} MB\n"
        return _command("Finished", seconds, -9, stdout, stderr + note)
    if run.output_limit:
        return _command("Error", seconds, None, stdout, stderr + "stopped: output over the limit\n")
    code = -run.signal if run.signal else run.exit_code
    return _command("Finished", seconds, code, stdout, stderr)


class FusionRunner:
    """Runs `/run_code` requests in the code grader's sandboxes (blocking: on its worker threads)."""

    def __init__(self, grader: CodeGrader) -> None:
        self.grader = grader

    def run(self, request: RunCodeRequest) -> dict[str, Any]:
        config = self.grader.config
        language = LANGUAGES.get(request.language.lower())
        if language is None:
            return sandbox_error(f"language {request.language!r} is not supported by this sandbox ({SERVED})")
        if language != "python" and not self.grader.has_local_sandboxes():
            return sandbox_error(f"{language} needs the code grader's local sandbox backend")
        if request.files or request.fetch_files:
            return sandbox_error("files and fetch_files are not supported by this sandbox")
        source = self.grader.sandbox_source()
        memory_mb = config.memory_limit_mb if request.memory_limit_mb <= 0 else request.memory_limit_mb
        memory_mb = min(memory_mb, config.max_memory_limit_mb)
        run_timeout = min(request.run_timeout, config.max_time_limit_s)
        module = "__main__"
        session = Session(source, request.code, memory_mb << 20, 0, module, time_rule=self.grader.time_rule())
        try:
            compile_result = None
            chain = toolchain(language)
            if chain is not None and chain.compiled:
                compile_result = self._compile(session, request, language)
                if compile_result["return_code"] != 0:
                    return _response("Failed", "", compile_result, None)
            elif language != "python":  # an interpreted language: its source installed as the program
                prepare_binary(session, self.grader.native_build(language), time.monotonic())
            started = time.monotonic()
            try:
                run = session.run_stdio(request.stdin or "", run_timeout, config.max_output_bytes)
            except CandidateFailure as exc:
                seconds = time.monotonic() - started
                if exc.reason == "timeout":
                    result = _command("TimeLimitExceeded", seconds, None, "", exc.message)
                else:
                    result = _command("Error", seconds, None, "", f"{exc.reason}: {exc.message}")
                return _response("Failed", "", compile_result, result)
            result = _run_result(run, time.monotonic() - started, memory_mb)
        except InfrastructureError as exc:
            return sandbox_error(str(exc)[:500])
        finally:
            session.close()
        ok = result["status"] == "Finished" and result["return_code"] == 0
        return _response("Success" if ok else "Failed", "", compile_result, result)

    def _compile(self, session: Session, request: RunCodeRequest, language: str) -> dict[str, Any]:
        config = self.grader.config
        limit = min(request.compile_timeout, config.compile_time_limit_s)
        build = self.grader.native_build(language, limit)
        started = time.monotonic()
        error = prepare_binary(session, build, started + session.time_rule.wall(limit) + 5.0)
        seconds = time.monotonic() - started
        if error is None:
            return _command("Finished", seconds, 0, "", "")
        if error.startswith("compiling took over") or error.startswith("compiling: timeout"):
            return _command("TimeLimitExceeded", seconds, None, "", error)
        return _command("Finished", seconds, 1, "", error)


def code_grader_of(grader: Grader) -> CodeGrader | None:
    """The code grader inside a reward_rules grader (or the grader itself), if this install has one."""
    if isinstance(grader, CodeGrader):
        return grader
    graders = getattr(grader, "graders", None)
    found = graders.get("code") if isinstance(graders, dict) else None
    return found if isinstance(found, CodeGrader) else None


def fusion_router(grader: Grader) -> APIRouter:
    """`POST /run_code` (SandboxFusion's), backed by `grader`'s code sandboxes; also as
    `POST /run_code/<token>` for a service with a token (veRL sends no Authorization header: its
    URL carries the token; the kit's middleware checks it, as it checks the header elsewhere)."""
    router = PathTokenRouter(token_prefix="/run_code/")
    code = code_grader_of(grader)
    runner = FusionRunner(code) if code is not None else None

    async def run_code(request: RunCodeRequest) -> JSONResponse:
        if runner is None:
            return JSONResponse(sandbox_error("this service has no code sandbox (see its log)"))
        return JSONResponse(await runner.grader.run_blocking(runner.run, request))

    router.add_api_route("/run_code", run_code, methods=["POST"])
    router.add_api_route("/run_code/{token}", run_code, methods=["POST"], include_in_schema=False)
    return router
