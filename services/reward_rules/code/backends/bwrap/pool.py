"""Pre-started sandboxes: start-up is paid ahead of time, and no program's sandbox serves two runs.

Starter threads keep `warm` sandboxes launched (bwrap + interpreter + harness imported,
waiting for their first request); `acquire()` hands one out and wakes them to launch its
replacement. `release()` never returns a sandbox to the pool: a reaper thread kills it, so
nothing of one run (files, processes, memory) reaches the next. Only its emptied cgroups are
used again, for a later sandbox (creating and removing cgroup v1 groups costs more than a
third of a launch); a reused group's limits are reset and its OOM count read as a baseline.
(Label sandboxes, which hold label code and never a program, are kept between samples by
judge.LabelRunPool: each sample runs in a fresh fork of a clean zygote.)
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import deque
from pathlib import Path

from services.reward_rules.code.backends.base import SandboxLike
from services.reward_rules.code.backends.bwrap.cgroups import CgroupManager, MemoryBelowUse, SandboxCgroup
from services.reward_rules.code.backends.bwrap.sandbox import Limits, Mode, Sandbox, bwrap_path
from services.reward_rules.code.backends.bwrap.seccomp import filter_program
from services.reward_rules.code.runner import LanguageRunner

log = logging.getLogger(__name__)
STARTERS = 2  # launch threads: a launch mostly waits on fork/exec and cgroupfs, not on the GIL


def local_sandbox(sandbox: SandboxLike) -> Sandbox:
    """A sandbox given back to a local source: one it handed out, so a local `Sandbox`."""
    if not isinstance(sandbox, Sandbox):
        raise TypeError(f"not a local sandbox: {type(sandbox).__name__}")
    return sandbox


class SandboxPool:
    def __init__(
        self,
        runner: LanguageRunner,
        limits: Limits,
        *,
        mode: Mode,
        warm: int,
        host_uid: int,
        use_cgroups: bool = True,
        seccomp: bool = True,
    ) -> None:
        self.runner = runner
        self.limits = limits
        self.mode: Mode = mode
        self.warm_target = warm
        self.host_uid = host_uid
        self.bwrap = bwrap_path() if mode == "bwrap" else None
        runner.prepare()
        self.seccomp = filter_program() if seccomp and mode == "bwrap" else None
        self.cgroups = CgroupManager.detect() if use_cgroups else None
        # its sandboxes count their CPU time: the harness times runs on it (harness._supervise)
        self.cpu_timed = self.cgroups is not None and self.cgroups.base_cpuacct is not None
        if self.cgroups is None:
            log.warning(
                "code sandbox: no usable cgroup v1 memory/pids controllers; limits fall back to rlimits"
            )
        self._warm: deque[Sandbox] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._launching = 0
        self._live: set[Sandbox] = set()
        self._dead: queue.SimpleQueue[Sandbox | None] = queue.SimpleQueue()
        self._spare: list[SandboxCgroup] = []  # emptied groups at the default limits
        self._custom: set[Path] = set()  # groups whose memory limit acquire() changed
        self.started = 0
        self._starters = [
            threading.Thread(target=self._keep_warm, name=f"code-sandbox-starter-{n}", daemon=True)
            for n in range(STARTERS)
        ]
        self._reaper = threading.Thread(target=self._reap, name="code-sandbox-reaper", daemon=True)
        for starter in self._starters:
            starter.start()
        self._reaper.start()

    def _cgroup(self) -> SandboxCgroup | None:
        if self.cgroups is None:
            return None
        with self._lock:
            if self._spare:
                return self._spare.pop()
        return self.cgroups.create(self.limits.memory_bytes, self.limits.max_pids, self.limits.cpu_limit)

    def _recycle(self, cgroup: SandboxCgroup) -> None:
        """Keeps an emptied group for a later sandbox, else removes it."""
        reuse = not self._closed and len(self._spare) < 2 * self.warm_target + 8 and cgroup.empty()
        if reuse and cgroup.memory in self._custom:
            try:
                cgroup.set_memory_limit(self.limits.memory_bytes)
            except OSError:
                reuse = False
        if reuse:
            with self._lock:
                self._custom.discard(cgroup.memory)
                self._spare.append(cgroup)
            return
        with self._lock:
            self._custom.discard(cgroup.memory)
        cgroup.remove()

    def _launch(self) -> Sandbox:
        cgroup = self._cgroup()
        try:
            sandbox = Sandbox(
                self.runner,
                self.limits,
                mode=self.mode,
                bwrap=self.bwrap,
                cgroup=cgroup,
                host_uid=self.host_uid,
                seccomp=self.seccomp,
            )
        except BaseException:
            if cgroup is not None:
                self._recycle(cgroup)
            raise
        with self._lock:
            self._live.add(sandbox)
            self.started += 1
        return sandbox

    def _keep_warm(self) -> None:
        while not self._closed:
            self._wake.wait(timeout=1.0)
            self._wake.clear()
            while not self._closed:
                with self._lock:  # claim a slot, so that several starters never overshoot
                    if len(self._warm) + self._launching >= self.warm_target:
                        break
                    self._launching += 1
                    if len(self._warm) + self._launching < self.warm_target:
                        self._wake.set()  # more to launch: the other starters help
                try:
                    sandbox = self._launch()
                except Exception:
                    log.exception("code sandbox: launch failed")
                    with self._lock:
                        self._launching -= 1
                    break
                with self._lock:
                    self._launching -= 1
                    if self._closed:
                        self._dead.put(sandbox)
                        break
                    self._warm.append(sandbox)

    def acquire(self, memory_bytes: int) -> Sandbox:
        """A fresh sandbox for one run; its memory limit set to `memory_bytes` where cgroups allow."""
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        with self._lock:
            sandbox = self._warm.popleft() if self._warm else None
        self._wake.set()
        if sandbox is None:
            sandbox = self._launch()
        try:
            self.set_memory_limit(sandbox, memory_bytes)
        except MemoryBelowUse:
            self.release(sandbox)
            raise
        return sandbox

    def set_memory_limit(self, sandbox: SandboxLike, memory_bytes: int) -> None:
        """Where cgroups allow; a changed group gets the default back before it is reused."""
        sandbox = local_sandbox(sandbox)
        if sandbox.cgroup is None:
            return
        with self._lock:
            if memory_bytes == self.limits.memory_bytes and sandbox.cgroup.memory not in self._custom:
                return
            self._custom.add(sandbox.cgroup.memory)
        sandbox.cgroup.set_memory_limit(memory_bytes)

    def release(self, sandbox: SandboxLike) -> None:
        self._dead.put(local_sandbox(sandbox))

    def _reap(self) -> None:
        while True:
            sandbox = self._dead.get()
            if sandbox is None:
                return
            try:
                sandbox.kill()
                if sandbox.cgroup is not None:
                    self._recycle(sandbox.cgroup)
            except Exception:
                log.exception("code sandbox: cleanup failed")
            with self._lock:
                self._live.discard(sandbox)

    def close(self) -> None:
        """Kills every sandbox, warm or in use, and removes this process's cgroups."""
        with self._lock:
            self._closed = True
            live = list(self._live)
            self._warm.clear()
        self._wake.set()
        for starter in self._starters:
            starter.join(timeout=10)
        for sandbox in live:
            self._dead.put(sandbox)
        self._dead.put(None)
        self._reaper.join(timeout=30)
        with self._lock:
            leftover = list(self._live)
        for sandbox in leftover:  # launched by the starter while closing
            with contextlib.suppress(Exception):
                sandbox.kill()
                if sandbox.cgroup is not None:
                    sandbox.cgroup.remove()
        with self._lock:
            spare, self._spare = self._spare, []
        for cgroup in spare:
            cgroup.remove()
        if self.cgroups is not None:
            self.cgroups.close()
