"""Compiled languages' programs (C++, Go, Rust, Java: languages.py): compiled in the candidate's
sandbox, once per distinct source and limits (a bounded cache); interpreted ones (bash, nodejs)
installed as they are.

The compiler is as hostile an input's target as the program (`#include </dev/zero>`, template
explosions): it runs inside the sample's sandbox, under its memory limit and a compile time
limit, and whatever it cannot do is the program's compile error (a verdict). A GRPO group
sends the same program many times: the cache keeps each compiled binary (and each compile
error) by the hash of source, compile command and the compile's limits (its memory and time:
what compiled under more memory may not under less); samples that arrive while it compiles wait
for that one compile instead of starting their own. A compile that failed for a resource limit
(killed by the memory limit, a signal, out of processes or disk) is never kept: under another
request's limits it might compile. A cached binary is copied into a fresh sandbox.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from services.reward_rules.code.languages import (
    Toolchain,
    compile_command,
    missing,
    run_command,
    source_name,
    toolchain,
)
from services.reward_rules.code.session import (
    TIMEOUT,
    CandidateFailure,
    InfrastructureError,
    MemoryTooSmall,
    Session,
    last_line,
)

COMPILE = "compile error"


@dataclass(frozen=True)
class Compiled:
    binary: bytes | None  # None: a compile error
    message: str = ""


class _Pending:
    """A compile under way: its waiters wake on `event` and take `outcome` when it has one."""

    __slots__ = ("event", "outcome")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.outcome: Compiled | None = None


class CompileCache:
    """Binaries and compile errors by source hash, least recently used out past `max_bytes`.

    Also bounds how many compiles run at once (`concurrency`): a compile's time limit is
    counted from its start, so compiles queued behind others are not timed out by the wait.
    A compile that ran out of time is not kept (under less load it might finish), but the samples
    that waited for it take its verdict: else each compiled the same program again, one after
    another, and a GRPO group of a program that compiles for ever held the compile slots (every
    other sample's compile) for its size times the compile time limit.
    """

    def __init__(self, max_bytes: int, concurrency: int = 2) -> None:
        self.max_bytes = max_bytes
        self.compiling = threading.BoundedSemaphore(concurrency)
        self._entries: OrderedDict[str, Compiled] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self.hits = 0
        self.misses = 0

    def _get(self, key: str) -> Compiled | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def claim(self, key: str, wait_s: float) -> Compiled | None:
        """The cached result, or None when the caller is to compile it (others wait for it)."""
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                entry = self._get(key)
                if entry is not None:
                    self.hits += 1
                    return entry
                pending = self._pending.get(key)
                if pending is None:
                    self._pending[key] = _Pending()
                    self.misses += 1
                    return None
            if not pending.event.wait(max(deadline - time.monotonic(), 0)):
                with self._lock:
                    self.misses += 1
                return None  # compile it too rather than wait past the budget
            if pending.outcome is not None:  # what the compile it waited for came to, kept or not
                with self._lock:
                    self.hits += 1
                return pending.outcome

    def finish(self, key: str, result: Compiled | None, unkept: Compiled | None = None) -> None:
        """Stores a result (None: nothing worth caching, e.g. a compile that timed out); the
        samples waiting for this compile take `result`, else `unkept` (that timeout)."""
        with self._lock:
            if result is not None and key not in self._entries:
                self._entries[key] = result
                self._bytes += len(result.binary or b"") + len(result.message)
                while self._bytes > self.max_bytes and len(self._entries) > 1:
                    _, old = self._entries.popitem(last=False)
                    self._bytes -= len(old.binary or b"") + len(old.message)
            pending = self._pending.pop(key, None)
        if pending is not None:
            pending.outcome = result or unkept
            pending.event.set()


def cache_key(
    source: str, argv: list[str], files: dict[str, str] | None = None, limits: tuple[float, ...] = ()
) -> str:
    """The compile's identity: the source, the whole command, the files beside it, and the limits
    it ran under (`limits`: its memory bytes and time limit). Encoded with surrogatepass: any str,
    a lone surrogate (a JSON escape let it in) included, has its one key (never an exception)."""
    digest = hashlib.sha256("\0".join(argv).encode("utf-8", "surrogatepass"))
    digest.update(("\0\2" + ",".join(f"{limit!r}" for limit in limits)).encode())
    for name, text in sorted((files or {}).items()):
        named = name.encode("utf-8", "surrogatepass") + b"\0"
        digest.update(b"\0\1" + named + hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    digest.update(b"\0\0")
    digest.update(source.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _compiler_message(stderr: bytes) -> str:
    """The compiler's first error line (the last line is usually a caret or a summary)."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    errors = [line.strip() for line in lines if "error" in line]
    return errors[0][:300] if errors else last_line(stderr)


# What a compiler says when a limit, not the source, stopped it (g++ when the memory killer took
# cc1plus, a failed fork or allocation, a full /tmp, the JVM's, Go's and Rust's allocators).
_RESOURCE = re.compile(
    r"Killed signal terminated program|cannot allocate memory|virtual memory exhausted|out of memory"
    r"|OutOfMemoryError|could not reserve enough space|memory allocation of \d+ bytes failed"
    r"|resource temporarily unavailable|cannot fork|no space left on device|file size limit exceeded"
    r"|pthread_create failed|failed to create (?:a )?(?:new )?thread|unable to create native thread",
    re.IGNORECASE,
)


def resource_failure(stderr: bytes) -> bool:
    """Whether a failed compile's output says a resource limit stopped it (never cached)."""
    return _RESOURCE.search(stderr.decode("utf-8", "replace")) is not None


@dataclass(frozen=True)
class NativeBuild:
    """How a program of `language` is built: compiled in the sample's sandbox (cached), or, for an
    interpreted language, installed as it is with its interpreter's run command. `argv` is the C++
    compiler and its flags (the other languages' commands are in languages.py)."""

    cache: CompileCache
    argv: list[str]
    time_limit_s: float
    max_binary_bytes: int
    memory_bytes: int
    language: str = "cpp"
    chain: Toolchain = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        chain = toolchain(self.language)
        if chain is None or chain.in_harness:
            raise ValueError(f"no native build for language {self.language!r}")
        object.__setattr__(self, "chain", chain)


def prepare_binary(
    session: Session, build: NativeBuild, deadline: float, files: dict[str, str] | None = None
) -> str | None:
    """Puts the program in the session's sandbox, compiled if its language is; a compile error's
    message otherwise.

    The compile gets the build's memory (at least the tests' limit) and its own time limit,
    outside the tests' budget; the tests get theirs. `deadline` bounds the wait for a compile of
    the same source under way elsewhere. A toolchain missing from this host is an
    InfrastructureError (GRADER_ERROR), never the program's compile error. `files` (headers, by
    name) are put beside the source, and count in the cache key."""
    chain = build.chain
    run = run_command(chain, session.program, session.memory_bytes)
    if chain.needs_memory_cgroup:
        session.start()
        if getattr(session.sandbox, "cgroup", "") is None:  # a local sandbox limited by rlimits
            raise InfrastructureError(
                f"{chain.name} needs the sandboxes' memory limit in a cgroup (its runtime reserves more "
                "address space than the rlimit that stands in for one allows): see docs/deployment.md"
            )
    if not chain.compiled:  # an interpreter runs the source itself
        problem = missing(chain)
        if problem is not None:
            raise InfrastructureError(problem)
        session.install_binary(session.program.encode("utf-8", "surrogateescape"), run=run)
        return None
    cache, max_binary_bytes = build.cache, build.max_binary_bytes
    problem = missing(chain)
    if chain.name == "cpp" and not os.access(build.argv[0], os.X_OK):
        problem = f"the C++ compiler {build.argv[0]} is not on this host (apt-get install g++)"
    if problem is not None:
        raise InfrastructureError(problem)
    memory = max(build.memory_bytes, session.memory_bytes)
    command = compile_command(chain, session.program, memory, build.argv[0], build.argv[1:])
    key = cache_key(session.program, command, files, (memory, build.time_limit_s))
    cached = cache.claim(key, max(deadline - time.monotonic(), 0))
    if cached is not None:
        if cached.binary is None:
            return cached.message
        session.install_binary(cached.binary, run=run)
        return None
    result: Compiled | None = None
    unkept: Compiled | None = None  # a timeout: not kept, but the samples waiting for it take it
    cache.compiling.acquire()
    try:
        limit = build.time_limit_s
        wall = session.time_rule.wall(limit)  # the compiler's CPU time is the limit, where counted
        message: dict[str, object] = {
            "op": "compile",
            "source": session.program,
            "source_name": source_name(chain, session.program),
            "output": chain.output,
            "command": command,
            "time_limit_s": limit,
            "wall_limit_s": wall,
            "max_binary_bytes": max_binary_bytes,
        }
        if files:
            message["files"] = {
                name: base64.b64encode(text.encode("utf-8", "surrogateescape")).decode()
                for name, text in files.items()
            }
        session.start()
        oom_before = session.sandbox.oom_kills() if session.sandbox is not None else 0
        session.set_memory(memory)
        try:
            reply = session.exchange(
                message, time.monotonic() + wall + 2.0, max_binary_bytes * 4 // 3 + (64 << 10)
            )
        finally:
            session.set_memory(session.memory_bytes)
        if reply.get("compiled") is True:
            binary = base64.b64decode(str(reply.get("binary", "")), validate=True)
            result = Compiled(binary)
            session.install_binary(binary, installed=True, run=run)
            return None
        stderr = base64.b64decode(str(reply.get("stderr", "")), validate=True)
        if reply.get("timeout"):
            unkept = Compiled(None, f"compiling took over {limit:g} s")  # load-dependent: not cached
            return unkept.message
        detail = _compiler_message(stderr) or (
            f"compiler killed by signal {reply.get('signal')}" if reply.get("signal") else ""
        )
        if reply.get("started") is False:  # nothing compiled: neither kept nor given to waiters
            return detail or "the compiler did not start"
        oom = session.sandbox is not None and session.sandbox.oom_kills() > oom_before
        if oom or reply.get("signal") or resource_failure(stderr):
            # a limit stopped it, not the source: the same limits' waiters take it, nobody later
            why = f"over the compile's memory limit of {memory >> 20} MB" if oom else detail
            unkept = Compiled(None, f"compiling: {why or 'the compiler failed'}")
            return unkept.message
        result = Compiled(None, detail or "the compiler failed")
        return result.message
    except MemoryTooSmall:
        raise  # the run's limit, not the source's: no outcome kept, a waiter compiles it itself
    except CandidateFailure as exc:
        unkept = Compiled(
            None, f"compiling: {TIMEOUT if exc.reason == TIMEOUT else exc.reason} {exc.message}".strip()
        )
        return unkept.message
    finally:
        cache.compiling.release()
        cache.finish(key, result, unkept)
