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

At most `max_live_interpreters` run at once. Past it, the least recently used idle interpreter
is reclaimed; when its episode runs code again, a fresh interpreter first replays that episode's
earlier cells (their output discarded), which restores its variables for deterministic code;
code that depends on time, randomness without a seed, or files read once sees new values.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from services.episodes.settings import EpisodeSettings
from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.sandbox import Limits, Sandbox, SandboxError

log = logging.getLogger(__name__)

TIMEOUT, MEMORY, EXITED, OVERSIZE = "timeout", "memory", "exited", "output"
_FRAME_SLACK = 4096  # reply bytes beyond the kept output (12 bytes: an astral character, escaped)


@cache
def repl_source() -> str:
    return Path(__file__).with_name("repl.py").read_text()


@dataclass
class ReplRunner:
    """A LanguageRunner (services/reward_rules/code/runner.py) whose sandbox runs repl.py."""

    interpreter: str = "/usr/bin/python3"

    @property
    def name(self) -> str:
        return "python-repl"

    @property
    def function_tests(self) -> bool:
        return False

    def prepare(self) -> None:
        if not Path(self.interpreter).exists():
            raise RuntimeError(f"no sandbox interpreter at {self.interpreter}")

    def binds(self) -> list[tuple[str, str]]:
        return []  # the REPL is small: it travels on the command line

    def argv(self, sandboxed: bool = True) -> list[str]:
        return [self.interpreter, "-I", "-S", "-B", "-c", repl_source()]


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


def _run_cell(sandbox: Sandbox, code: str, limit_s: float, max_output: int) -> CellResult:
    """One cell in a live sandbox (blocking; a worker thread runs it)."""
    cpu_timed = sandbox.cpu_timed
    started_wall = time.monotonic()
    started_cpu = _cpu_ns(sandbox)
    wall = limit_s * 3 + 1 if cpu_timed else limit_s
    if cpu_timed and started_cpu is not None:
        sandbox.cpu_watch = (started_cpu, int(limit_s * 1e9))
    oom_before = sandbox.oom_kills()
    killed = ""
    reply: dict[str, object] = {}
    try:
        reply = sandbox.request(
            {"op": "exec", "code": code, "max_output": max_output},
            started_wall + wall,
            max_reply=max_output * 12 + _FRAME_SLACK,
        )
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
    if killed:
        return CellResult(output="", error=True, truncated=False, cpu_s=max(cpu_s, 0.0), killed=killed)
    output = reply.get("output")
    return CellResult(
        output=output if isinstance(output, str) else "",
        error=reply.get("error") is True,
        truncated=reply.get("truncated") is True,
        cpu_s=max(cpu_s, 0.0),
    )


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
        self._executor = ThreadPoolExecutor(self.capacity + 2, thread_name_prefix="episode-repl")
        self._live: OrderedDict[str, ReplSession] = OrderedDict()  # least recently used first
        self._freed = asyncio.Event()
        self.reclaimed = 0
        self._closed = False

    @property
    def live(self) -> int:
        return len(self._live)

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
                acquired = await self._call(self._sandboxes.acquire, self.limits.memory_bytes)
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

    async def _reserve(self, session: ReplSession) -> None:
        """A live slot for `session`: reclaims the least recently used idle interpreter when full."""
        while len(self._live) >= self.capacity:
            idle = next((s for s in self._live.values() if not s.busy), None)
            if idle is not None:
                await self._drop(idle)
                self.reclaimed += 1
                continue
            self._freed.clear()
            await self._freed.wait()  # every live interpreter runs a cell: the first to end frees one
        self._live[session.key] = session
        if self._closed:
            raise RuntimeError("the interpreter pool is closed")

    async def _drop(self, session: ReplSession) -> None:
        """Kills the session's interpreter (the pool's reaper thread does it) and frees its slot."""
        self._live.pop(session.key, None)
        sandbox, session.sandbox = session.sandbox, None
        if sandbox is not None:
            self._sandboxes.release(sandbox)
        self._freed.set()

    async def close_session(self, session: ReplSession) -> None:
        session.closed = True
        if session.preparing is not None:
            preparing, session.preparing = session.preparing, None
            await asyncio.shield(preparing)
        await self._drop(session)

    def close(self) -> None:
        """Kills every interpreter and removes the sandboxes' cgroups (blocking)."""
        self._closed = True
        for session in list(self._live.values()):
            sandbox, session.sandbox = session.sandbox, None
            if sandbox is not None:
                with contextlib.suppress(Exception):
                    self._sandboxes.release(sandbox)
        self._live.clear()
        self._sandboxes.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
