"""SandboxFusion's `/run_code` on the code grader's sandboxes (the HTTP route: run_code_api.py).

veRL points `reward.sandbox_fusion.url` (its reward path, `verl.utils.reward_score.sandbox_fusion`)
at a SandboxFusion server's `/run_code`; pointing it here instead is the only change. Request and
response shapes are the ones veRL 0.9.1's client sends and reads (`call_sandbox_api`,
`_process_single_case`): `{code, language, stdin, compile_timeout, run_timeout, memory_limit_MB,
files, fetch_files}` in; `{status: Success | Failed | SandboxError, message, compile_result,
run_result, executor_pod_name, files}` out, each result `{status: Finished | Error |
TimeLimitExceeded, execution_time, return_code, stdout, stderr}`. veRL 0.9.1 calls no other
SandboxFusion endpoint (its reward path runs each test case as one `/run_code`; the release ships
no SandboxFusion tool), so this is the one served. docs/graders/code.md has the whole contract.

As in SandboxFusion: `language` is required (a request without it is a 422); `run_timeout` and
`compile_timeout` are wall-clock limits (a program that sleeps past `run_timeout` is
`TimeLimitExceeded`, `return_code` null), while each sandbox keeps the grader's CPU quota, so a
run's CPU time never exceeds its wall time (where the quota is off, CPU time is limited to the
same figure); `files` are written beside the program (`null` skipped) and `fetch_files` come back
base64 in `files`, paths confined to the run's directory (fusion_files.py).

Every run is one program in a fresh process in a sandbox of the code grader's pool (a reused one
only once proven clean), with the same isolation, seccomp filter, cgroup and compile cache as
graded samples, but on threads of its own: `/run_code` never takes the grader's workers. A
bounded number run at once, callers in turn, with a bounded queue (fusion_slots.py); a request
not started within `run_code_max_wait_s`, or refused by a full queue, is answered 504 (veRL's
client retries on 504). Every answer comes within compile + run + 10 s of the request (veRL's own
HTTP timeout): past compile + run + 3 s after it started, a run is killed and answered 504. A run
whose caller hung up is killed at once (a compile under way finishes first: others may be waiting
for it in the compile cache). Every language of languages.py, compiled in the sandbox with the
grader's flags and cached by source and limits; any other language is a `SandboxError` naming the
ones served.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from services.reward_rules.code.backends.bwrap.sandbox import Sandbox
from services.reward_rules.code.fusion_files import FilesRefused, fetch_plan, upload_plan
from services.reward_rules.code.fusion_slots import FairSlots, Overloaded
from services.reward_rules.code.grader import LANGUAGES, SERVED, CodeGrader
from services.reward_rules.code.languages import toolchain
from services.reward_rules.code.native import prepare_binary
from services.reward_rules.code.session import (
    START_TIMEOUT_S,
    CandidateFailure,
    InfrastructureError,
    Session,
    StdioRun,
    TimeRule,
)
from services.scoring.grader import Grader

RunStatus = Literal["Finished", "Error", "TimeLimitExceeded"]


class Answer(NamedTuple):
    """An HTTP status and its JSON body: the route (services/reward_rules/run_code_api.py) sends it
    as it is."""

    status: int
    body: dict[str, Any]


class RunCodeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    code: str
    language: str  # required, as in SandboxFusion: a request without it is a 422
    stdin: str | None = None
    compile_timeout: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    run_timeout: float = Field(default=10.0, gt=0, allow_inf_nan=False)
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
    status: str,
    message: str,
    compile_result: dict[str, Any] | None,
    run_result: dict[str, Any] | None,
    files: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": compile_result,
        "run_result": run_result,
        "executor_pod_name": None,
        "files": files or {},
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


def wall_clock(rule: TimeRule) -> TimeRule:
    """SandboxFusion's limits: the wall clock. Where sandboxes count their CPU time, the CPU limit
    is the same figure (under the CPU quota a run's CPU time stays below its wall time anyway)."""
    return TimeRule(rule.cpu, 1.0, 0.0)


class Cancelled(Exception):
    """The request's caller hung up, or its time ran out: nobody reads the answer."""


class Cancel:
    """Kills a request's run from the event loop when its caller hangs up (or its time is up).

    The run's thread attaches its session once the sandbox is started; `cancel` kills that sandbox's
    processes (SIGKILL, the cgroup's too), and the blocked run returns at once. A cancel that comes
    before the attach is seen by the thread right after it (`attach` raises Cancelled)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.cancelled = False
        self._session: Session | None = None

    def attach(self, session: Session) -> None:
        with self._lock:
            if self.cancelled:
                raise Cancelled
            self._session = session

    def detach(self) -> None:
        with self._lock:
            self._session = None

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            session = self._session
        sandbox = session.sandbox if session is not None else None
        if session is not None and isinstance(sandbox, Sandbox):
            session.reusable = False
            with contextlib.suppress(ProcessLookupError):
                sandbox.process.kill()
            if sandbox.cgroup is not None:
                sandbox.cgroup.kill_all()


class FusionRunner:
    """Runs `/run_code` requests in the code grader's sandboxes, on threads of its own."""

    def __init__(self, grader: CodeGrader) -> None:
        self.grader = grader
        config = grader.config
        self.workers = config.run_code_workers or grader.workers
        self.slots = FairSlots(
            self.workers, config.run_code_per_caller, config.run_code_queue, config.run_code_queue_per_caller
        )
        self._executor: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ on the event loop

    async def serve(self, request: RunCodeRequest, caller: str) -> Answer:
        """The answer to one request: 422 for files it refuses, 504 when no slot is free within
        run_code_max_wait_s or the run overruns its time, else 200 and SandboxFusion's JSON."""
        config = self.grader.config
        try:
            uploads = upload_plan(request.files, config.run_code_max_files, self._upload_bytes())
            fetches = fetch_plan(request.fetch_files, config.run_code_max_files)
        except FilesRefused as exc:
            return Answer(422, {"detail": str(exc)})
        try:
            await self.slots.acquire(caller, self._wait_allowed(request))
        except Overloaded as exc:
            return Answer(504, {"detail": str(exc)})
        cancel = Cancel()
        try:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="run-code")
            future = asyncio.get_running_loop().run_in_executor(
                self._executor, self.run, request, cancel, uploads, fetches
            )
        except BaseException:
            self.slots.release(caller)
            raise
        future.add_done_callback(lambda _: self.slots.release(caller))  # the slot is held until it ends
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), self._time_allowed(request))
        except TimeoutError:
            cancel.cancel()
            return Answer(504, {"detail": "the run took longer than its limits allow"})
        finally:
            if not future.done():
                cancel.cancel()  # the client left (this task was cancelled), or the time is up
        return Answer(200, answer)

    def _upload_bytes(self) -> int:
        """What a request may upload: run_code_files_mb, and never more than the sandbox's /tmp
        holds (past it the upload failed in the sandbox, a SandboxError blamed on the service)."""
        config = self.grader.config
        return min(config.run_code_files_mb, config.tmpfs_mb) << 20

    def _compile_s(self, request: RunCodeRequest) -> float:
        """The compile limit a request's run may spend: none for an interpreted language."""
        chain = toolchain(request.language)
        if chain is None or not chain.compiled:
            return 0.0
        return min(request.compile_timeout, self.grader.config.compile_time_limit_s)

    def _time_allowed(self, request: RunCodeRequest) -> float:
        """From the start of its run: its compile and run limits (as capped) and 3 s."""
        return self._compile_s(request) + min(request.run_timeout, self.grader.config.max_time_limit_s) + 3.0

    def _wait_allowed(self, request: RunCodeRequest) -> float:
        """How long a request may wait for a slot: run_code_max_wait_s (5 s), which with the run's
        own time (_time_allowed) fits in veRL's HTTP timeout, compile + run + 10 s; and what that
        timeout counts but the run will not spend (an interpreted language's compile_timeout, the
        part of a limit over the grader's caps)."""
        unspent = request.compile_timeout - self._compile_s(request)
        unspent += request.run_timeout - min(request.run_timeout, self.grader.config.max_time_limit_s)
        return self.grader.config.run_code_max_wait_s + max(unspent, 0.0)

    # ------------------------------------------------------------------ on its threads

    def run(
        self,
        request: RunCodeRequest,
        cancel: Cancel | None = None,
        uploads: dict[str, str] | None = None,
        fetches: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One request, blocking (on the runner's threads)."""
        cancel = cancel or Cancel()
        config = self.grader.config
        language = LANGUAGES.get(request.language.lower())
        if language is None:
            return sandbox_error(f"language {request.language!r} is not supported by this sandbox ({SERVED})")
        local = self.grader.has_local_sandboxes()
        if language != "python" and not local:
            return sandbox_error(f"{language} needs the code grader's local sandbox backend")
        if uploads is None or fetches is None:
            try:
                uploads = upload_plan(request.files, config.run_code_max_files, self._upload_bytes())
                fetches = fetch_plan(request.fetch_files, config.run_code_max_files)
            except FilesRefused as exc:
                return sandbox_error(str(exc))
        if (uploads or fetches) and not local:
            return sandbox_error("files and fetch_files need the code grader's local sandbox backend")
        source = self.grader.sandbox_source()
        memory_mb = config.memory_limit_mb if request.memory_limit_mb <= 0 else request.memory_limit_mb
        memory_mb = min(memory_mb, config.max_memory_limit_mb)
        run_timeout = min(request.run_timeout, config.max_time_limit_s)
        rule = wall_clock(self.grader.time_rule())
        session = Session(source, request.code, memory_mb << 20, 0, "__main__", time_rule=rule)
        try:
            compile_result = None
            chain = toolchain(language)
            if chain is not None and chain.compiled:
                compile_result = self._compile(session, request, language)
                if compile_result["return_code"] != 0:
                    return _response("Failed", "", compile_result, None)
            elif language != "python":  # an interpreted language: its source installed as the program
                prepare_binary(session, self.grader.native_build(language), time.monotonic())
            if uploads:
                self._upload(session, uploads)
            session.start()
            cancel.attach(session)
            started = time.monotonic()
            try:
                run = session.run_stdio(request.stdin or "", run_timeout, config.max_output_bytes)
            except CandidateFailure as exc:
                seconds = time.monotonic() - started
                if cancel.cancelled:
                    raise Cancelled from None
                if exc.reason == "timeout":
                    result = _command("TimeLimitExceeded", seconds, None, "", exc.message)
                else:
                    result = _command("Error", seconds, None, "", f"{exc.reason}: {exc.message}")
                return _response("Failed", "", compile_result, result)
            finally:
                cancel.detach()
            result = _run_result(run, time.monotonic() - started, memory_mb)
            files, message = self._fetch(session, fetches) if fetches else ({}, "")
        except Cancelled:
            return sandbox_error("cancelled: the caller hung up or the time ran out")
        except CandidateFailure as exc:  # before the run: a memory limit below the sandbox's own use
            if cancel.cancelled:
                return sandbox_error("cancelled: the caller hung up or the time ran out")
            note = f"killed: over the memory limit of {memory_mb} MB ({exc.message})\n"
            return _response("Failed", "", compile_result, _command("Finished", 0.0, -9, "", note))
        except InfrastructureError as exc:
            return sandbox_error(str(exc)[:500])
        finally:
            session.close()
        ok = result["status"] == "Finished" and result["return_code"] == 0
        return _response("Success" if ok else "Failed", message, compile_result, result, files)

    def _upload(self, session: Session, uploads: dict[str, str]) -> None:
        size = sum(len(data) for data in uploads.values())
        try:
            reply = session.exchange(
                {"op": "upload", "files": uploads}, time.monotonic() + START_TIMEOUT_S, 64 << 10
            )
        except CandidateFailure as exc:  # nothing of the program has run yet
            raise InfrastructureError(f"the sandbox failed taking {size} bytes of files: {exc}") from None
        if reply.get("ok") is not True:
            raise InfrastructureError(f"the sandbox refused the files: {reply}"[:300])

    def _fetch(self, session: Session, fetches: dict[str, str]) -> tuple[dict[str, str], str]:
        """The fetch_files the run left (base64, by the names requested) and a note on those left out."""
        if session.sandbox is None:  # the run ended its sandbox (a crash of the harness): nothing left
            return {}, "fetch_files: the sandbox did not survive the run"
        limit = self.grader.config.run_code_files_mb << 20
        message = {"op": "fetch", "names": sorted(set(fetches.values())), "max_bytes": limit}
        try:
            reply = session.exchange(message, time.monotonic() + START_TIMEOUT_S, limit * 4 // 3 + (1 << 20))
        except CandidateFailure as exc:
            return {}, f"fetch_files: {exc}"[:300]
        found = reply.get("files") if isinstance(reply.get("files"), dict) else {}
        assert isinstance(found, dict)
        files = {name: str(found[path]) for name, path in fetches.items() if path in found}
        over = [str(name) for name in reply.get("over") or []][:10]
        note = f"fetch_files over {limit >> 20} MB in all, left out: {', '.join(over)}" if over else ""
        return files, note

    def _compile(self, session: Session, request: RunCodeRequest, language: str) -> dict[str, Any]:
        config = self.grader.config
        limit = min(request.compile_timeout, config.compile_time_limit_s)
        build = self.grader.native_build(language, limit)
        started = time.monotonic()
        error = prepare_binary(session, build, started + limit + 1.0)
        seconds = time.monotonic() - started
        if error is None:
            return _command("Finished", seconds, 0, "", "")
        if error.startswith("compiling took over") or error.startswith("compiling: timeout"):
            return _command("TimeLimitExceeded", seconds, None, "", error)
        return _command("Finished", seconds, 1, "", error)

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def code_grader_of(grader: Grader) -> CodeGrader | None:
    """The code grader inside a reward_rules grader (or the grader itself), if this install has one."""
    if isinstance(grader, CodeGrader):
        return grader
    graders = getattr(grader, "graders", None)
    found = graders.get("code") if isinstance(graders, dict) else None
    return found if isinstance(found, CodeGrader) else None
