"""Candidate sandboxes reused across samples, each sample in a fresh fork, each sandbox proven clean.

A fresh sandbox costs ~40 ms of CPU from launch to removal; a C++ test run ~1.5 ms, a HumanEval
sample's calls about as much. So samples (stdio tests, function tests, C++ checker programs,
`/run_code` calls) reuse sandboxes the way label sandboxes are reused:

- sealed before its first sample: the harness is undumpable (a run's processes, the same uid,
  cannot open its /proc/pid/mem or fds; ptrace is refused by the seccomp filter) and notes what
  they could still change on it from outside (nice, scheduling policy, CPUs, rlimits);
- each sample is served by a fork of that harness (`SAMPLE_OP`): the fork reads the sample's
  frames (its program, inputs, files, a checker's expected answers) and runs its code, so the
  harness (the zygote) never holds any request's data, and a Python run (a fork of the fork)
  starts from memory that holds nothing of an earlier request;
- after the sample (`reset`): the fork exits, every other process is killed, the work dir
  emptied (its mode set back), the zygote's attributes compared; then the service waits until
  the sandbox's cgroup holds only the processes it held when sealed, sends a fresh nonce, and
  drops every frame before the matching pong (frames a run wrote ahead cannot answer for the
  next sample). SysV and POSIX IPC objects and keyrings, which would outlive their processes,
  cannot be made (seccomp).

A sandbox where anything else happened (a run that tampered with the fork or the zygote, a
failure, a memory kill, a reset that is not clean or not in time) is killed as before; each
serves at most `MAX_USES` samples.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from services.reward_rules.code.backends.base import SandboxLike
from services.reward_rules.code.backends.bwrap.cgroups import MemoryBelowUse
from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.sandbox import SAMPLE_OP, Sandbox, SandboxError, proven_clean

MAX_USES = 64
RESET_TIMEOUT_S = 2.0
SEAL_TIMEOUT_S = 30.0


@dataclass
class _State:
    baseline: int  # processes in its cgroups with only the harness running
    uses: int
    oom_before: int
    kept_at: float = 0.0  # when it was last kept idle (trim)


def _begin(sandbox: Sandbox) -> bool:
    """Has the sealed harness fork the process that serves the next sample (no reply)."""
    try:
        sandbox.send_raw(SAMPLE_OP, time.monotonic() + SEAL_TIMEOUT_S)
    except SandboxError:
        return False
    return True


class ReusedSandboxes:
    """A SandboxSource: idle clean sandboxes first, else fresh (sealed) ones from the pool."""

    def __init__(self, pool: SandboxPool, keep: int) -> None:
        self.pool = pool
        self.keep = keep
        self._idle: list[tuple[Sandbox, _State]] = []
        self._out: dict[int, _State] = {}  # handed out, by id(sandbox)
        self._lock = threading.Lock()
        self._closed = False
        self.reused = 0
        self.fresh = 0

    def acquire(self, memory_bytes: int) -> Sandbox:
        """A sandbox whose harness forked this sample's process (fresh ones: sealed first)."""
        while True:
            with self._lock:
                idle = self._idle.pop() if self._idle else None
            if idle is None:
                break
            sandbox, state = idle
            try:
                self.pool.set_memory_limit(sandbox, memory_bytes)
            except MemoryBelowUse:
                self.pool.release(sandbox)  # its limit half-set: never reused
                raise
            state.oom_before = sandbox.oom_kills()
            if not _begin(sandbox):
                self.pool.release(sandbox)
                continue
            with self._lock:
                self._out[id(sandbox)] = state
                self.reused += 1
            return sandbox
        sandbox = self.pool.acquire(memory_bytes)
        with self._lock:
            self.fresh += 1
        if sandbox.cgroup is None:
            return sandbox  # no way to prove it clean later: used once
        deadline = time.monotonic() + SEAL_TIMEOUT_S
        try:
            sandbox.wait_ready(deadline)
            reply = sandbox.request({"op": "seal"}, deadline)
        except SandboxError:
            return sandbox  # the session's own start reports it
        if reply.get("sealed") is True:
            state = _State(len(sandbox.cgroup.pids_in()), 0, sandbox.oom_kills())
            if _begin(sandbox):
                with self._lock:
                    self._out[id(sandbox)] = state
        return sandbox

    def set_memory_limit(self, sandbox: SandboxLike, memory_bytes: int) -> None:
        self.pool.set_memory_limit(sandbox, memory_bytes)

    def release(self, sandbox: SandboxLike) -> None:
        """A sandbox not to be reused (its sample failed it, or stopped reading mid-batch)."""
        with self._lock:
            self._out.pop(id(sandbox), None)
        self.pool.release(sandbox)

    def give_back(self, sandbox: Sandbox) -> None:
        """A sandbox whose sample ended: reset and kept if proven clean, else killed."""
        with self._lock:
            state = self._out.pop(id(sandbox), None)
        if state is None or self._closed or state.uses + 1 >= MAX_USES or not self._reset(sandbox, state):
            self.pool.release(sandbox)
            return
        state.uses += 1
        state.kept_at = time.monotonic()
        with self._lock:
            if not self._closed and len(self._idle) < self.keep:
                self._idle.append((sandbox, state))
                return
        self.pool.release(sandbox)

    def _reset(self, sandbox: Sandbox, state: _State) -> bool:
        if not proven_clean(sandbox, b'{"op":"reset"}', state.baseline, state.oom_before, RESET_TIMEOUT_S):
            return False
        sandbox.stderr_tail.clear()
        sandbox.stderr_bytes = 0
        return True

    def trim(self, idle_s: float, leave: int = 0) -> int:
        """Kills the idle sandboxes kept longer than `idle_s` unused, but the `leave` most recently
        kept (so a burst's sandboxes go once it is over); returns how many."""
        now = time.monotonic()
        with self._lock:
            older = self._idle[: max(len(self._idle) - leave, 0)]  # the least recently kept first
            expired = [entry for entry in older if now - entry[1].kept_at > idle_s]
            gone = {id(sandbox) for sandbox, _ in expired}
            self._idle = [entry for entry in self._idle if id(entry[0]) not in gone]
        for sandbox, _ in expired:
            self.pool.release(sandbox)
        return len(expired)

    def idle_sandboxes(self) -> list[Sandbox]:
        with self._lock:
            return [sandbox for sandbox, _ in self._idle]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sandbox, _ in idle:
            self.pool.release(sandbox)
