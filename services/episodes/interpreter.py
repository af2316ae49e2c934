"""Persistent sandboxed Python interpreters, one per episode, under a bound on how many live.

Each interpreter is the code grader's bubblewrap sandbox (services/reward_rules/code: its
launcher, cgroups, seccomp filter and pre-started pool) running repl.py instead of the test
harness. An episode keeps its interpreter between turns, so its variables survive.

Limits, enforced from outside the sandbox: a cell's CPU time (the sandbox's cpuacct group; a
cell that sleeps or blocks meets the wall-clock limit, 3x + 1 s) or its wall time where CPU is
not counted; memory, processes, /tmp size and CPU share (the sandbox's cgroups); the output
kept (in the REPL, and the reply frame's size). A cell that passes its time, memory or frame
limit, or ends the interpreter, gets the interpreter killed: the episode is told so, and the
next cell starts a fresh one.

A finished episode's sandbox serves a later one, as `/run_code`'s do (reuse.py): the sandbox's
first process is a zygote that forks each episode's interpreter and, when the episode ends,
kills every process but itself, empties /tmp and checks nothing changed it; the service then
proves the sandbox holds only the zygote (its cgroup's processes, a nonce's pong) before the
next episode's interpreter is forked. So an episode costs a fork, not a bubblewrap launch, and
nothing of it (files, processes, variables, environment) reaches the next one. A sandbox where
anything else happened (a cell killed for its limits, an interpreter that ended, a reset that
is not clean or not in time) is killed instead; each serves at most reuse.MAX_USES episodes.
A sandbox is kept only while the live interpreters and the kept ones are fewer than
`max_live_interpreters`; an interpreter about to start waits for one being proven clean rather
than launching a sandbox; close() kills the kept ones with the rest.

At most `max_live_interpreters` run at once. Past it, the least recently used idle interpreter
is reclaimed; when its episode runs code again, a fresh interpreter first replays that episode's
earlier cells (their output discarded), which restores its variables for deterministic code;
code that depends on time, randomness without a seed, or files read once sees new values.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from services.episodes.settings import EpisodeSettings
from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.reuse import RESET_TIMEOUT_S, ReusedSandboxes, _State
from services.reward_rules.code.backends.bwrap.sandbox import (
    CPU_OVER,
    CPU_POLL_S,
    Limits,
    Sandbox,
    SandboxError,
    parse_frame,
)
from services.reward_rules.code.runner import HARNESS_PATH, PythonRunner

log = logging.getLogger(__name__)

TIMEOUT, MEMORY, EXITED, OVERSIZE = "timeout", "memory", "exited", "output"
_FRAME_SLACK = 4096  # reply bytes beyond the kept output (12 bytes: an astral character, escaped)
# CPU a quota-limited sandbox can use beyond `cpus` x wall time: a CFS period's quota left at the
# start and one used early at the end (the kernel's default period, 100 ms, which cgroups.py keeps)
_QUOTA_SLACK_S = 0.2


@cache
def repl_source() -> str:
    return Path(__file__).with_name("repl.py").read_text()


@dataclass
class ReplRunner:
    """A LanguageRunner (services/reward_rules/code/runner.py) whose sandbox runs repl.py; the
    code harness's bytecode is bound beside it, for its zygote's clean-up between episodes."""

    interpreter: str = "/usr/bin/python3"
    _harness: PythonRunner | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return "python-repl"

    @property
    def function_tests(self) -> bool:
        return False

    def prepare(self) -> None:
        if not Path(self.interpreter).exists():
            raise RuntimeError(f"no sandbox interpreter at {self.interpreter}")
        if self._harness is None:
            self._harness = PythonRunner(self.interpreter)
        self._harness.prepare()

    def binds(self) -> list[tuple[str, str]]:
        self.prepare()
        assert self._harness is not None
        return self._harness.binds()  # the REPL itself is small: it travels on the command line

    def argv(self, sandboxed: bool = True) -> list[str]:
        harness = HARNESS_PATH if sandboxed else self.binds()[0][0]
        return [self.interpreter, "-I", "-S", "-B", "-c", repl_source(), harness]


@dataclass(frozen=True)
class CellResult:
    output: str
    error: bool  # the cell raised (a traceback is in the output) or was killed
    truncated: bool
    cpu_s: float
    killed: str = ""  # TIMEOUT, MEMORY, EXITED, OVERSIZE: the interpreter was killed and is gone


@dataclass(eq=False)
class ReplSession:
    """One episode's interpreter state: its live sandbox (if any) and the cells that rebuild it."""

    key: str
    history: list[str] = field(default_factory=list)
    sandbox: Sandbox | None = None
    busy: bool = False
    preparing: asyncio.Task[None] | None = None  # an interpreter started ahead of the first cell
    closed: bool = False
    cpu_s: float = 0.0
    replays: int = 0  # interpreters rebuilt from the history after a reclaim


def _cpu_ns(sandbox: Sandbox) -> int | None:
    return sandbox.cpu_usage_ns()


def _quota_cpus(sandbox: Sandbox) -> float:
    """The CPUs the sandbox's CFS quota allows (0: no quota, so no bound on its CPU rate)."""
    has_quota = sandbox.cgroup is not None and sandbox.cgroup.cpu is not None
    return sandbox.limits.cpu_limit if has_quota else 0.0


def _cell_reply(
    sandbox: Sandbox,
    message: dict[str, object],
    deadline: float,
    max_reply: int,
    limit_ns: int,
    started_cpu: int,
    cpus: float,
) -> dict[str, Any]:
    """The cell's reply, its CPU time kept under `limit_ns` with few wake-ups: under a quota of
    `cpus` the sandbox's CPU grows at most that fast (plus _QUOTA_SLACK_S of quota), so it is read
    only when the limit could have been passed; waking every CPU_POLL_S instead, hundreds of
    waiting cells cost the service more than their sandboxes (a cell slowed by other work waits
    longest, and wakes least)."""
    body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode()
    sandbox.wait_ready(deadline)
    sandbox.send_raw(body, deadline)
    while True:
        used = (sandbox.cpu_usage_ns() or started_cpu) - started_cpu
        if used > limit_ns:
            raise SandboxError("timeout", CPU_OVER)
        wait = max((limit_ns - used) / 1e9 / cpus - _QUOTA_SLACK_S, CPU_POLL_S)
        try:
            return parse_frame(sandbox.receive_raw(min(time.monotonic() + wait, deadline), max_reply))
        except SandboxError as exc:
            if exc.kind != "timeout" or time.monotonic() >= deadline:
                raise


def _run_cell(sandbox: Sandbox, code: str, limit_s: float, max_output: int) -> CellResult:
    """One cell in a live sandbox (blocking; a worker thread runs it)."""
    cpu_timed = sandbox.cpu_timed
    started_wall = time.monotonic()
    started_cpu = _cpu_ns(sandbox)
    wall = limit_s * 3 + 1 if cpu_timed else limit_s
    cpus = _quota_cpus(sandbox) if cpu_timed and started_cpu is not None else 0.0
    if cpu_timed and started_cpu is not None and cpus <= 0:
        sandbox.cpu_watch = (started_cpu, int(limit_s * 1e9))
    oom_before = sandbox.oom_kills()
    killed = ""
    reply: dict[str, object] = {}
    message: dict[str, object] = {"op": "exec", "code": code, "max_output": max_output}
    deadline, max_reply = started_wall + wall, max_output * 12 + _FRAME_SLACK
    try:
        if cpus > 0 and started_cpu is not None:
            limit_ns = int(limit_s * 1e9)
            reply = _cell_reply(sandbox, message, deadline, max_reply, limit_ns, started_cpu, cpus)
        else:
            reply = sandbox.request(message, deadline, max_reply=max_reply)
    except SandboxError as exc:
        if sandbox.oom_kills() > oom_before:
            killed = MEMORY
        elif exc.kind == "timeout":
            killed = TIMEOUT
        elif exc.kind in ("oversize", "protocol"):
            killed = OVERSIZE
        else:
            killed = MEMORY if sandbox.oom_kills() > oom_before else EXITED
    finally:
        sandbox.cpu_watch = None
    ended_cpu = _cpu_ns(sandbox) if not killed else None
    if started_cpu is not None and ended_cpu is not None:
        cpu_s = (ended_cpu - started_cpu) / 1e9
    else:
        cpu_s = min(time.monotonic() - started_wall, wall) if killed != TIMEOUT else limit_s
    output = reply.get("output")
    if not killed and not isinstance(output, str):  # the zygote's `ended`: its interpreter died
        killed = MEMORY if sandbox.oom_kills() > oom_before else EXITED
    if killed:
        return CellResult(output="", error=True, truncated=False, cpu_s=max(cpu_s, 0.0), killed=killed)
    assert isinstance(output, str)
    return CellResult(
        output=output,
        error=reply.get("error") is True,
        truncated=reply.get("truncated") is True,
        cpu_s=max(cpu_s, 0.0),
    )


class EpisodeSandboxes(ReusedSandboxes):
    """ReusedSandboxes whose reset first waits for the zygote's `ended` (its clean-up done), so
    that proving the sandbox clean finds its cgroup at once instead of polling it every
    millisecond while the zygote works (under load, a hundred reads of cgroupfs an episode)."""

    def _reset(self, sandbox: Sandbox, state: _State) -> bool:
        deadline = time.monotonic() + RESET_TIMEOUT_S
        try:
            sandbox.send_raw(b'{"op":"end"}', deadline)
            sandbox.receive_raw(deadline, 1 << 16)  # `ended`, or a frame the episode wrote ahead
        except SandboxError:
            return False
        # the proof itself, unchanged: its reset reaches the zygote outside a sample (answered
        # `ended` at once), and only a fresh nonce's pong once the cgroup is back counts
        return super()._reset(sandbox, state)


class InterpreterPool:
    """Live interpreters for every episode of this process, at most `max_live_interpreters`."""

    def __init__(self, settings: EpisodeSettings) -> None:
        tool = settings.python_tool
        self.settings = settings
        self.limits = Limits(
            memory_bytes=tool.memory_limit_mb << 20,
            max_pids=tool.max_pids,
            tmpfs_bytes=tool.tmpfs_mb << 20,
            max_frame_bytes=tool.max_output_chars * 12 + _FRAME_SLACK,
            cpu_limit=tool.cpu_limit,
        )
        self.capacity = settings.max_live_interpreters
        self._sandboxes = SandboxPool(
            ReplRunner(settings.python),
            self.limits,
            mode=settings.sandbox,
            warm=settings.warm_interpreters,
            host_uid=settings.sandbox_uid,
        )
        self.cpu_timed = self._sandboxes.cpu_timed
        reuse = tool.reuse_sandboxes and settings.sandbox == "bwrap"
        self._reuse = EpisodeSandboxes(self._sandboxes, keep=self.capacity) if reuse else None
        self._returning: dict[Future[None], None] = {}  # sandboxes being proven clean, oldest first
        self._awaited = 0  # of those, awaited by interpreters about to start (_returned)
        self._returning_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(self.capacity + 2, thread_name_prefix="episode-repl")
        self._stop = threading.Event()
        if self._reuse is not None:
            threading.Thread(target=self._trim, name="episode-sandbox-trim", daemon=True).start()
        self._live: OrderedDict[str, ReplSession] = OrderedDict()  # least recently used first
        self._freed = asyncio.Event()
        self.reclaimed = 0
        self._closed = False

    @property
    def live(self) -> int:
        return len(self._live)

    @property
    def reused(self) -> int:
        """Interpreters forked in a sandbox an earlier episode used (proven clean since)."""
        return self._reuse.reused if self._reuse is not None else 0

    def idle_sandboxes(self) -> int:
        """Sandboxes kept for later episodes (their zygotes only), and those being proven clean."""
        kept = len(self._reuse.idle_sandboxes()) if self._reuse is not None else 0
        with self._returning_lock:
            return kept + len(self._returning)

    async def _call(self, function: object, *args: object) -> object:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, function, *args)  # type: ignore[arg-type]

    def prestart(self, session: ReplSession) -> None:
        """Starts the session's interpreter now, while the policy writes its first turn, when a
        slot is free (never by reclaiming another's): the first cell then finds it running."""
        if session.sandbox is not None or session.preparing is not None or self._closed:
            return
        if len(self._live) >= self.capacity:
            return

        async def prepare() -> None:
            session.busy = True
            try:
                await self._ensure(session, self.settings.python_tool.cell_time_limit_s)
            except Exception:  # the first cell starts one itself, and reports what fails
                log.warning("episode interpreter: prestart failed", exc_info=True)
            finally:
                session.busy = False
                self._freed.set()

        session.preparing = asyncio.ensure_future(prepare())

    async def run(self, session: ReplSession, code: str, limit_s: float, max_output: int) -> CellResult:
        """Runs `code` in the session's interpreter, starting (and replaying) one when it has none."""
        if session.preparing is not None:
            preparing, session.preparing = session.preparing, None
            await asyncio.shield(preparing)
        if session.busy:
            raise RuntimeError("a session runs one cell at a time")
        session.busy = True
        try:
            sandbox = await self._ensure(session, limit_s)
            result = await self._call(_run_cell, sandbox, code, limit_s, max_output)
            assert isinstance(result, CellResult)
            session.cpu_s += result.cpu_s
            if result.killed:
                await self._drop(session)
            else:
                session.history.append(code)
            return result
        finally:
            session.busy = False
            if session.key in self._live:
                self._live.move_to_end(session.key)
            self._freed.set()

    async def _ensure(self, session: ReplSession, limit_s: float) -> Sandbox:
        if session.sandbox is not None:
            self._live.move_to_end(session.key)
            return session.sandbox
        try:
            replayed = False
            while True:  # ends: each pass either finishes or drops one cell from the history
                await self._reserve(session)
                await self._returned()
                source = self._reuse if self._reuse is not None else self._sandboxes
                acquired = await self._call(source.acquire, self.limits.memory_bytes)
                assert isinstance(acquired, Sandbox)
                session.sandbox = acquired
                failed = None
                for index, cell in enumerate(session.history):  # rebuild what a reclaim took away
                    replayed = True
                    result = await self._call(_run_cell, acquired, cell, limit_s, 64)
                    assert isinstance(result, CellResult)
                    if result.killed:  # no longer fits its limits: the state is rebuilt without it
                        failed = index
                        break
                if failed is None:
                    session.replays += int(replayed)
                    return acquired
                del session.history[failed]
                await self._drop(session)
        except BaseException:
            await self._drop(session)
            raise

    async def _returned(self) -> None:
        """With no clean sandbox kept but some being proven clean, waits for one of those (a reset
        costs milliseconds, a launch tens of them): one waiter for each, the rest start fresh."""
        if self._reuse is None or self._reuse.idle_sandboxes():
            return
        with self._returning_lock:
            pending = list(self._returning)
            if self._awaited >= len(pending):
                return
            future = pending[self._awaited]
            self._awaited += 1
        try:
            with contextlib.suppress(Exception):  # a failed give-back killed it: the caller starts one
                await asyncio.wrap_future(future)
        finally:
            with self._returning_lock:
                self._awaited -= 1

    async def _reserve(self, session: ReplSession) -> None:
        """A live slot for `session`: reclaims the least recently used idle interpreter when full."""
        while len(self._live) >= self.capacity:
            idle = next((s for s in self._live.values() if not s.busy), None)
            if idle is not None:
                await self._drop(idle)  # killed, not kept: kept ones would pass the bound
                self.reclaimed += 1
                continue
            self._freed.clear()
            await self._freed.wait()  # every live interpreter runs a cell: the first to end frees one
        self._live[session.key] = session
        if self._closed:
            raise RuntimeError("the interpreter pool is closed")

    async def _drop(self, session: ReplSession, keep: bool = False) -> None:
        """Frees the session's slot; its sandbox is killed (the pool's reaper thread does it) or,
        with `keep`, reset for a later episode where reuse is on and the bound leaves room."""
        self._live.pop(session.key, None)
        sandbox, session.sandbox = session.sandbox, None
        if sandbox is not None:
            if keep and self._reuse is not None and not self._closed:
                if len(self._live) + len(self._reuse.idle_sandboxes()) < self.capacity:
                    self._give_back(sandbox)
                else:
                    self._reuse.release(sandbox)
            elif self._reuse is not None:
                self._reuse.release(sandbox)
            else:
                self._sandboxes.release(sandbox)
        self._freed.set()

    def _trim(self) -> None:
        """Kills kept sandboxes left unused for kept_sandbox_idle_s (a thread: after a burst no
        call comes that could do it), but the warm_interpreters most recently kept."""
        assert self._reuse is not None
        idle_s = self.settings.python_tool.kept_sandbox_idle_s
        while not self._stop.wait(min(idle_s / 2, 1.0)):
            try:
                self._reuse.trim(idle_s, leave=self.settings.warm_interpreters)
            except Exception:
                log.warning("episode interpreter: trimming kept sandboxes failed", exc_info=True)

    def _give_back(self, sandbox: Sandbox) -> None:
        """Proves the sandbox clean in a worker thread (milliseconds; RESET_TIMEOUT_S at most)
        and keeps it for a later episode, or kills it; the episode's finish does not wait."""
        assert self._reuse is not None
        future = self._executor.submit(self._reuse.give_back, sandbox)
        with self._returning_lock:
            self._returning[future] = None

        def done(finished: Future[None]) -> None:
            with self._returning_lock:
                self._returning.pop(finished, None)

        future.add_done_callback(done)

    async def close_session(self, session: ReplSession) -> None:
        session.closed = True
        if session.preparing is not None:
            preparing, session.preparing = session.preparing, None
            await asyncio.shield(preparing)
        await self._drop(session, keep=not session.busy)

    def close(self) -> None:
        """Kills every interpreter and kept sandbox, removes the sandboxes' cgroups (blocking)."""
        self._closed = True
        self._stop.set()
        with self._returning_lock:
            returning = list(self._returning)
        wait_futures(returning, timeout=RESET_TIMEOUT_S + 1)  # each ends kept or killed
        for session in list(self._live.values()):
            sandbox, session.sandbox = session.sandbox, None
            if sandbox is not None:
                with contextlib.suppress(Exception):
                    (self._reuse or self._sandboxes).release(sandbox)
        self._live.clear()
        if self._reuse is not None:
            self._reuse.close()
        self._sandboxes.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
