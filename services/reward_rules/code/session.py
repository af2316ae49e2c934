"""The candidate program loaded in a sandbox, called from trusted code through plain values.

A session owns one sandbox at a time. When the candidate times out, runs out of memory or
kills its sandbox, the session says so once (as a `CandidateFailure`) and, for the next
test, loads the program again in a fresh sandbox, up to `max_restarts` times, so one bad
test does not fail the tests after it.
"""

from __future__ import annotations

import base64
import json
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from services.reward_rules.code.backends.base import SandboxLike, SandboxSource
from services.reward_rules.code.backends.bwrap.cgroups import MemoryBelowUse
from services.reward_rules.code.backends.bwrap.sandbox import CPU_OVER, Sandbox, SandboxError, parse_frame
from services.reward_rules.code.harness import (
    CandidateError,
    CodecError,
    candidate_exception,
    decode_value,
    encode_value,
)

# Why a test failed, as counted in the logs.
WRONG, TIMEOUT, MEMORY, CRASH, OUTPUT = (
    "wrong answer",
    "timeout",
    "memory limit",
    "runtime error",
    "output limit",
)


class InfrastructureError(Exception):
    """The grader could not get a working sandbox: not the candidate's fault."""


class CandidateFailure(BaseException):
    """The candidate stopped answering: timeout, memory limit or crash.

    A BaseException so that test code's `except Exception:` cannot swallow it.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message


class MemoryTooSmall(CandidateFailure):
    """A run's memory limit below what its sandbox already holds (cgroups.MemoryBelowUse): the
    program's memory verdict. Never a compile's result: native.py keeps no outcome for it."""


def last_line(data: bytes) -> str:
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


@dataclass
class StdioRun:
    exit_code: int
    signal: int
    timeout: bool
    output_limit: bool
    memory_killed: bool
    stdout: bytes
    stderr: bytes
    over: str = ""  # which limit a timeout passed: "cpu" (CPU time), "wall" (wall clock), "" (unsaid)


@dataclass(frozen=True)
class TimeRule:
    """How a test's time limit is measured.

    `cpu`: the sandboxes count their CPU time (a cpuacct cgroup): the time limit is the CPU time
    of everything the test ran in the program's sandbox, and the wall-clock limit, for a program
    that sleeps or blocks, is `wall_factor` x the limit + `wall_extra_s`: a program slowed by
    other samples' load stays within its CPU time and passes. Otherwise the limit is wall-clock.
    """

    cpu: bool = False
    wall_factor: float = 3.0
    wall_extra_s: float = 1.0

    def wall(self, limit_s: float) -> float:
        return limit_s * self.wall_factor + self.wall_extra_s if self.cpu else limit_s


WALL_CLOCK = TimeRule()  # time limits on the wall clock (no CPU accounting)


_SMALL_REPLY = 64 << 10  # a load reply: ok or an exception's type and message
START_TIMEOUT_S = 30.0  # a sandbox normally starts in ~50 ms; this only bounds a sick machine
SUPERVISION_SLACK_S = 1.0  # past its limit, the harness gets this long to report before the kill


# A reused sandbox's zygote answers this once the process serving the sample (where a function
# test's program runs) has died (harness.fork_sample): for the session, the sandbox died.
ENDED_FRAME = b'{"ended":true}'
_SAMPLE_ENDED = SandboxError("died", "the program exited")

S = TypeVar("S", bound=SandboxLike)


def start_sandbox(
    acquire: Callable[[], S], discard: Callable[[S], None], what: str, run_memory: bool = False
) -> S:
    """A sandbox from `acquire()` whose harness answered; a launch that failed fast (not a
    timeout) is tried once more. InfrastructureError (never the program's fault) otherwise; but
    with `run_memory` (the limit is the run's), a harness killed for memory before it answered
    is MemoryTooSmall: no program fits that limit."""
    for attempt in range(2):
        sandbox = acquire()
        try:
            sandbox.wait_ready(time.monotonic() + START_TIMEOUT_S)
        except SandboxError as exc:
            oom = run_memory and sandbox.oom_kills() > 0
            discard(sandbox)
            if oom:
                raise MemoryTooSmall(MEMORY, "the sandbox could not start under the memory limit") from None
            if attempt or exc.kind == "timeout":
                raise InfrastructureError(f"{what} did not start: {exc}; {sandbox.stderr_text()}") from exc
            continue
        except Exception as exc:  # e.g. a launch that fails before the harness runs
            discard(sandbox)
            raise InfrastructureError(f"{what} did not start: {exc}") from exc
        return sandbox
    raise AssertionError("unreachable")


class Session:
    def __init__(
        self,
        source_pool: SandboxSource,
        program: str,
        memory_bytes: int,
        max_restarts: int,
        module: str,
        prelude: str = "",
        time_rule: TimeRule | None = None,
    ) -> None:
        self.pool = source_pool
        self.time_rule = time_rule or TimeRule()
        self._test_cpu_ns = 0  # a function test's CPU limit (begin_test); 0: none
        self._test_cpu_base: tuple[SandboxLike, int] | None = None
        self.program = program
        self.prelude = prelude  # the label's helpers, run before the program in its namespace
        self.memory_bytes = memory_bytes
        self.restarts_left = max_restarts
        self.module = module
        self.sandbox: SandboxLike | None = None
        self.failure: CandidateFailure | None = None  # the last one, until a restart
        self.load_error: Exception | None = None
        self.stderr_bytes = 0
        self.binary: bytes | None = None  # a compiled program, installed in every fresh sandbox
        self.run_argv: list[str] = []  # how a run starts `binary` (languages.run_command); []: exec it
        self._installed: SandboxLike | None = None  # the sandbox that holds `binary`
        self.reusable = False  # nothing failed in this sandbox: another sample may reuse it (reuse.py)

    # -------------------------------------------------------------- lifecycle

    def _start(self) -> SandboxLike:
        if self.sandbox is not None:
            return self.sandbox
        if self.failure is not None:
            if self.restarts_left <= 0:
                raise CandidateFailure(self.failure.reason, "not run: the program kept failing")
            self.restarts_left -= 1
            self.failure = None
        try:
            self.sandbox = start_sandbox(
                lambda: self.pool.acquire(self.memory_bytes), self.pool.release, "sandbox", run_memory=True
            )
        except MemoryBelowUse as exc:
            raise MemoryTooSmall(MEMORY, str(exc)) from None
        self.reusable = True
        return self.sandbox

    def _install(self, sandbox: SandboxLike, binary: bytes, deadline: float) -> None:
        try:
            reply = sandbox.request({"op": "binary", "data": base64.b64encode(binary).decode()}, deadline)
        except SandboxError as exc:
            raise self._fail(sandbox, exc) from None
        if reply.get("ok") is not True:
            raise InfrastructureError(f"could not install the compiled program: {reply}"[:300])
        self._installed = sandbox

    def install_binary(self, binary: bytes, installed: bool = False, run: list[str] | None = None) -> None:
        """Makes `binary` the program, in every sandbox this session runs it in (`installed`: the
        running sandbox has it already). Sent with the first run in each sandbox. `run`: the argv
        that runs it (an interpreter's, `{program}` standing for it); none: it is executed."""
        self.binary = binary
        self.run_argv = list(run or [])
        self._installed = self.sandbox if installed else None

    def start(self) -> None:
        """A running sandbox (a fresh one after a failure, if restarts are left)."""
        self._start()

    def set_memory(self, memory_bytes: int) -> None:
        """Changes the running sandbox's memory limit (a compile may need more than the tests)."""
        if self.sandbox is not None:
            try:
                self.pool.set_memory_limit(self.sandbox, memory_bytes)
            except MemoryBelowUse as exc:
                self.reusable = False
                raise MemoryTooSmall(MEMORY, str(exc)) from None

    def exchange(self, message: dict[str, Any], deadline: float, max_reply: int) -> dict[str, Any]:
        """One request to the sandbox (started if need be); a failure is the candidate's."""
        return self._request(message, deadline, max_reply)

    def close(self) -> None:
        if self.sandbox is not None:
            self.stderr_bytes += self.sandbox.stderr_bytes
            give_back = getattr(self.pool, "give_back", None)
            if self.reusable and give_back is not None:
                give_back(self.sandbox)  # only stdio runs happened in it: reused if proven clean
            else:
                self.pool.release(self.sandbox)
            self.sandbox = None
            self.reusable = False
        self._installed = None

    def _fail(self, sandbox: SandboxLike, exc: SandboxError) -> CandidateFailure:
        """Turns a sandbox that stopped answering into the candidate's failure; drops the sandbox."""
        self.reusable = False
        sandbox.kill()
        if exc.kind == "timeout":
            failure = CandidateFailure(TIMEOUT, CPU_OVER if str(exc) == CPU_OVER else "")
        elif sandbox.oom_kills():
            failure = CandidateFailure(MEMORY, f"{self.memory_bytes >> 20} MB")
        elif exc.kind == "oversize":
            failure = CandidateFailure(OUTPUT, f"a reply larger than the test can use ({exc})")
        elif exc.kind == "protocol":
            failure = CandidateFailure(CRASH, f"corrupted the harness ({exc})")
        else:
            failure = CandidateFailure(CRASH, last_line(bytes(sandbox.stderr_tail)) or "the program exited")
        self.close()
        self.failure = failure
        return failure

    def _request(
        self, message: dict[str, Any], deadline: float, max_reply: int | None = None
    ) -> dict[str, Any]:
        sandbox = self._start()
        watched = message.get("op") in ("load", "call")
        try:
            if watched:
                self._watch_cpu(sandbox)
            reply = sandbox.request(message, deadline, max_reply)
        except SandboxError as exc:
            raise self._fail(sandbox, exc) from None
        finally:
            if watched:
                self._unwatch_cpu(sandbox)
        if reply.get("ended") is True:  # the sample's process died: its zygote said so
            raise self._fail(sandbox, _SAMPLE_ENDED)
        return reply

    # -------------------------------------------------------------- CPU time of function tests

    def begin_test(self, cpu_limit_s: float) -> None:
        """Starts a function test's CPU clock: its loads, calls and relayed calls (the program's
        code runs in its harness) together may use `cpu_limit_s` of the sandbox's CPU time (all
        of its threads and processes), where the sandbox counts it (`TimeRule.cpu`); the test's
        wall-clock deadline is the caller's."""
        self._test_cpu_ns = int(cpu_limit_s * 1e9) if self.time_rule.cpu else 0
        self._test_cpu_base = None

    def _watch_cpu(self, sandbox: SandboxLike) -> None:
        if not self._test_cpu_ns or not isinstance(sandbox, Sandbox):
            return
        if self._test_cpu_base is None or self._test_cpu_base[0] is not sandbox:
            usage = sandbox.cpu_usage_ns()
            if usage is None:
                return
            self._test_cpu_base = (sandbox, usage)
        sandbox.cpu_watch = (self._test_cpu_base[1], self._test_cpu_ns)

    @staticmethod
    def _unwatch_cpu(sandbox: SandboxLike) -> None:
        if isinstance(sandbox, Sandbox):
            sandbox.cpu_watch = None

    # -------------------------------------------------------------- function tests

    def prepare(self, deadline: float) -> None:
        """A ready sandbox with the program loaded by `deadline` (after a failure: a fresh one, if
        restarts are left). Loading is the candidate's time: a slow import is a timeout verdict."""
        if self.load_error is not None:
            raise self.load_error
        if self.sandbox is not None:
            return
        self._start()
        message = {"op": "load", "source": self.program, "module": self.module}
        if self.prelude:
            message["prelude"] = self.prelude
        reply = self._request(message, deadline, _SMALL_REPLY)
        if not reply.get("ok"):
            self.load_error = candidate_exception(reply.get("error"))
            self.close()
            raise self.load_error

    def call(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], deadline: float, max_reply: int
    ) -> Any:
        """Calls `name` in the loaded program; returns its value as builtins or raises its exception.

        A reply over `max_reply` bytes (more than the test's expected value can need) is never
        read: the candidate cannot make this process parse a large or deep frame. Call
        `prepare()` first: a failed sandbox is only replaced there, never mid-test.
        """
        try:
            message = {"op": "call", "name": name, "args": encode_value(list(args))}
            if kwargs:
                message["kwargs"] = encode_value(kwargs)
        except CodecError as exc:
            raise TypeError(f"argument cannot be sent to the sandbox: {exc}") from None
        if self.load_error is not None:
            raise self.load_error
        if self.sandbox is None:
            raise self.failure or InfrastructureError("call before prepare()")
        reply = self._request(message, deadline, max_reply)
        if not reply.get("ok"):
            raise candidate_exception(reply.get("error"))
        try:
            return decode_value(reply.get("value"))
        except (CodecError, ValueError, RecursionError) as exc:
            raise CandidateError(f"malformed value from the sandbox: {exc}") from None

    def relay(self, body: bytes, deadline: float, max_reply: int) -> bytes:
        """Forwards a judge's call frame to the program; its reply comes back unread (bounded)."""
        if self.load_error is not None:
            raise self.load_error
        if self.sandbox is None:
            raise self.failure or InfrastructureError("call before prepare()")
        sandbox = self.sandbox
        try:
            self._watch_cpu(sandbox)
            reply = sandbox.request_raw(body, deadline, max_reply)
        except SandboxError as exc:
            raise self._fail(sandbox, exc) from None
        finally:
            self._unwatch_cpu(sandbox)
        if reply == ENDED_FRAME:  # the sample's process died: its zygote said so
            raise self._fail(sandbox, _SAMPLE_ENDED)
        return reply

    # -------------------------------------------------------------- stdio tests

    def run_stdio(
        self,
        stdin: str,
        time_limit_s: float,
        max_output: int,
        files: dict[str, bytes] | None = None,
        args: list[str] | None = None,
        wall_limit_s: float | None = None,
    ) -> StdioRun:
        """One run on `stdin`; a compiled program may get `files` in its work dir and `args` (a
        checker program's convention), the work dir emptied after it. `time_limit_s` is measured
        as the time rule says; `wall_limit_s` (default: the rule's) caps its wall clock."""
        wall = self.time_rule.wall(time_limit_s) if wall_limit_s is None else wall_limit_s
        message: dict[str, Any] = {
            "op": "stdio",
            "input": stdin,
            "time_limit_s": time_limit_s,
            "wall_limit_s": wall,
            "max_output_bytes": max_output,
        }
        if files:
            message["files"] = {name: base64.b64encode(data).decode() for name, data in files.items()}
        if args:
            message["args"] = args
        sandbox = self._start()
        if self.binary is not None:
            message["binary"] = True
            if self.run_argv:
                message["run"] = self.run_argv
            if self._installed is not sandbox:
                self._install(sandbox, self.binary, time.monotonic() + START_TIMEOUT_S)
        else:
            message["source"] = self.program
        oom_before = sandbox.oom_kills()
        frame = (max_output + 4096) * 4 // 3 + _SMALL_REPLY  # base64 of the capped stdout and stderr tail
        reply = self._request(message, time.monotonic() + wall + SUPERVISION_SLACK_S, frame)
        try:
            run = StdioRun(
                exit_code=int(reply["exit"]),
                signal=int(reply["signal"]),
                timeout=bool(reply["timeout"]),
                output_limit=bool(reply["output_limit"]),
                memory_killed=sandbox.oom_kills() > oom_before,
                stdout=base64.b64decode(reply["stdout"], validate=True)[: max_output + 1],
                stderr=base64.b64decode(reply["stderr"], validate=True)[-4096:],
                over=str(reply.get("over") or ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise self._fail(sandbox, SandboxError("protocol", f"bad stdio reply: {exc}")) from None
        return run

    def stdio_batch(
        self,
        inputs: list[tuple[str, int]],
        time_limit_s: float,
        budget_deadline: float,
        max_timeouts: int,
        output_cap: int,
    ) -> Iterator[StdioRun | CandidateFailure | str]:
        """Runs the program on each `(stdin, max_output)` in turn, in one sandbox, each in a fresh
        process; yields one outcome per input, in order, as each finishes (the caller may judge one
        while the next runs): a StdioRun, "budget" or "timeouts" for one not run (`budget_deadline`
        passed, or `max_timeouts` runs timed out), or the CandidateFailure that ended the sandbox,
        after which it yields nothing more (the rest go to the next call: a fresh sandbox, if
        restarts are left). Raises CandidateFailure when no sandbox may start (restarts spent).

        A local sandbox gets the whole batch in one request and answers a frame per run (the
        harness keeps the same limits: harness.stdio_batch); each frame must come within the
        wall-clock limit (`TimeRule.wall`) and the supervision slack of the one before, the last
        by the budget (or within the slack of the caller's asking for it, when judging the one
        before took longer).

        Each input's `max_output` is applied here; the harness stops a run only past `output_cap`,
        the same for every run. A bound made from the expected output (its length) never goes into
        the sandbox: a Python run is a fork of the harness and reads what the harness was sent, so
        a yes/no problem's bound told its answer (`YES\\n` is 4 bytes, `NO\\n` 3).
        """
        sandbox = self._start()
        if not isinstance(sandbox, Sandbox):
            yield from self._stdio_each(inputs, time_limit_s, budget_deadline, max_timeouts)
            return
        message: dict[str, Any] = {
            "op": "stdio_batch",
            "inputs": [stdin for stdin, _ in inputs],
            "max_output_bytes": [max(output_cap, max_output) for _, max_output in inputs],
            "time_limit_s": time_limit_s,
            "wall_limit_s": self.time_rule.wall(time_limit_s),
            "budget_s": max(budget_deadline - time.monotonic(), 0.0),
            "max_timeouts": max_timeouts,
        }
        if self.binary is None:
            message["source"] = self.program
        else:
            message["binary"] = True
            if self.run_argv:
                message["run"] = self.run_argv
            if self._installed is not sandbox:
                message["data"] = base64.b64encode(self.binary).decode()
        oom_before = sandbox.oom_kills()
        finished = False
        try:
            try:
                sandbox.send_raw(
                    json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode(),
                    budget_deadline + START_TIMEOUT_S,
                )
            except SandboxError as exc:
                yield self._fail(sandbox, exc)
                finished = True
                return
            self._installed = sandbox
            last = time.monotonic() + (SUPERVISION_SLACK_S if "data" in message else 0.0)
            for index, (_, max_output) in enumerate(inputs):
                # Never before the slack from now: the caller judges a run (a checker, twice on a
                # FAIL; a checker sandbox's start) while the next runs, and a frame already waiting
                # when it asks is no timeout of the program's (the harness times each run itself).
                due = max(min(last + message["wall_limit_s"], budget_deadline), time.monotonic())
                deadline = due + SUPERVISION_SLACK_S
                frame = (message["max_output_bytes"][index] + 4096) * 4 // 3 + _SMALL_REPLY
                try:
                    reply = parse_frame(sandbox.receive_raw(deadline, frame))
                except SandboxError as exc:
                    yield self._fail(sandbox, exc)
                    finished = True
                    return
                last = time.monotonic()
                if reply.get("ended") is True:  # the sample's process died (a run killed it)
                    yield self._fail(sandbox, _SAMPLE_ENDED)
                    finished = True
                    return
                skipped = reply.get("skipped")
                if skipped == "dirty":  # a run left what the harness could not remove, or tampered with it
                    self._drop(sandbox, CandidateFailure(CRASH, "left the sandbox unfit for another run"))
                    finished = True
                    return
                if skipped in ("budget", "timeouts"):
                    yield str(skipped)
                    continue
                try:
                    run = self._stdio_run(reply, max_output)
                except (KeyError, TypeError, ValueError) as exc:
                    yield self._fail(sandbox, SandboxError("protocol", f"bad stdio reply: {exc}"))
                    finished = True
                    return
                if run.signal == signal.SIGKILL and not (run.timeout or run.output_limit):
                    run.memory_killed = sandbox.oom_kills() > oom_before  # else it killed itself
                yield run
            finished = True
        finally:
            if not finished:  # the caller stopped reading: runs may still be going on in there
                self.reusable = False

    def _stdio_each(
        self, inputs: list[tuple[str, int]], time_limit_s: float, budget_deadline: float, max_timeouts: int
    ) -> Iterator[StdioRun | CandidateFailure | str]:
        """stdio_batch one request per input (a remote sandbox)."""
        for stdin, max_output in inputs:
            left = budget_deadline - time.monotonic()
            if left <= 0:
                yield "budget"
                continue
            if max_timeouts <= 0:
                yield "timeouts"
                continue
            try:
                wall = min(self.time_rule.wall(time_limit_s), left)
                run = self.run_stdio(stdin, min(time_limit_s, left), max_output, wall_limit_s=wall)
            except CandidateFailure as exc:
                yield exc
                return
            max_timeouts -= run.timeout
            yield run

    def _drop(self, sandbox: SandboxLike, failure: CandidateFailure) -> None:
        """Kills a sandbox that may not serve another run; the next run takes a restart."""
        self.reusable = False
        sandbox.kill()
        self.close()
        self.failure = failure

    @staticmethod
    def _stdio_run(reply: dict[str, Any], max_output: int) -> StdioRun:
        stdout = base64.b64decode(reply["stdout"], validate=True)
        return StdioRun(
            exit_code=int(reply["exit"]),
            signal=int(reply["signal"]),
            timeout=bool(reply["timeout"]),
            output_limit=bool(reply["output_limit"]) or len(stdout) > max_output,
            memory_killed=False,
            stdout=stdout[: max_output + 1],
            stderr=base64.b64decode(reply["stderr"], validate=True)[-4096:],
            over=str(reply.get("over") or ""),
        )
