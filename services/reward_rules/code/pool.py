"""Pre-started sandboxes: start-up is paid ahead of time, and no sandbox ever serves two runs.

A starter thread keeps `warm` sandboxes launched (bwrap + interpreter + harness imported,
waiting for their first request); `acquire()` hands one out and wakes the starter to launch
its replacement. `release()` never returns a sandbox to the pool: a reaper thread kills it and
removes its cgroups, so nothing of one run (files, processes, memory) reaches the next.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import deque

from services.reward_rules.code.cgroups import CgroupManager
from services.reward_rules.code.runner import LanguageRunner
from services.reward_rules.code.sandbox import Limits, Mode, Sandbox, bwrap_path

log = logging.getLogger(__name__)


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
    ) -> None:
        self.runner = runner
        self.limits = limits
        self.mode: Mode = mode
        self.warm_target = warm
        self.host_uid = host_uid
        self.bwrap = bwrap_path() if mode == "bwrap" else None
        runner.prepare()
        self.cgroups = CgroupManager.detect() if use_cgroups else None
        if self.cgroups is None:
            log.warning(
                "code sandbox: no usable cgroup v1 memory/pids controllers; limits fall back to rlimits"
            )
        self._warm: deque[Sandbox] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._live: set[Sandbox] = set()
        self._dead: queue.SimpleQueue[Sandbox | None] = queue.SimpleQueue()
        self.started = 0
        self._starter = threading.Thread(target=self._keep_warm, name="code-sandbox-starter", daemon=True)
        self._reaper = threading.Thread(target=self._reap, name="code-sandbox-reaper", daemon=True)
        self._starter.start()
        self._reaper.start()

    def _launch(self) -> Sandbox:
        cgroup = None
        if self.cgroups is not None:
            cgroup = self.cgroups.create(self.limits.memory_bytes, self.limits.max_pids)
        try:
            sandbox = Sandbox(
                self.runner,
                self.limits,
                mode=self.mode,
                bwrap=self.bwrap,
                cgroup=cgroup,
                host_uid=self.host_uid,
            )
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        with self._lock:
            self._live.add(sandbox)
            self.started += 1
        return sandbox

    def _keep_warm(self) -> None:
        while not self._closed:
            self._wake.wait(timeout=1.0)
            self._wake.clear()
            while not self._closed and len(self._warm) < self.warm_target:
                try:
                    sandbox = self._launch()
                except Exception:
                    log.exception("code sandbox: launch failed")
                    break
                with self._lock:
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
        if sandbox.cgroup is not None and memory_bytes != self.limits.memory_bytes:
            sandbox.cgroup.set_memory_limit(memory_bytes)
        return sandbox

    def release(self, sandbox: Sandbox) -> None:
        self._dead.put(sandbox)

    def _reap(self) -> None:
        while True:
            sandbox = self._dead.get()
            if sandbox is None:
                return
            try:
                sandbox.kill()
                if sandbox.cgroup is not None:
                    sandbox.cgroup.remove()
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
        self._starter.join(timeout=10)
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
        if self.cgroups is not None:
            self.cgroups.close()
