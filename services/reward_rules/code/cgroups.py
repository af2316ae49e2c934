"""Per-sandbox cgroup v1 memory and pids limits, and the kill/cleanup that goes with them.

Every sandbox gets its own `memory` and `pids` cgroup under this process's own cgroups
(`.../arbiter-code-<pid>-<m>/sb-<n>`), so a memory bomb is stopped by the kernel's OOM killer
inside its group, a fork bomb by pids.max, and teardown can SIGKILL every process of the
group, whatever namespace it lives in. Groups left behind by a grader that died are removed
when the next one starts.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_PREFIX = "arbiter-code-"


def _v1_mounts() -> dict[str, Path]:
    """Mount points of the cgroup v1 controllers, by controller name."""
    mounts: dict[str, Path] = {}
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return mounts
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3 or extra[0] != "cgroup":
            continue
        for option in extra[2].split(","):
            mounts.setdefault(option, Path(fields[4]))
    return mounts


def _own_paths() -> dict[str, str]:
    paths: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return paths
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller:
                paths[controller] = path
    return paths


@dataclass(frozen=True)
class SandboxCgroup:
    """One sandbox's memory and pids groups."""

    memory: Path
    pids: Path

    def attach_self(self) -> None:
        """Moves the calling process in; called between fork and exec of the sandbox launcher."""
        pid = str(os.getpid()).encode()
        for group in (self.memory, self.pids):
            fd = os.open(group / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def set_memory_limit(self, memory_bytes: int) -> None:
        with contextlib.suppress(OSError):  # memsw must stay >= limit: raise it first, lower it last
            (self.memory / "memory.memsw.limit_in_bytes").write_text(str(max(memory_bytes, self._limit())))
        (self.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):
            (self.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))

    def _limit(self) -> int:
        try:
            return int((self.memory / "memory.limit_in_bytes").read_text())
        except (OSError, ValueError):
            return 0

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer took in this group so far."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.memory / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
            return int((self.memory / "memory.failcnt").read_text()) and 1
        return 0

    def pids_in(self) -> list[int]:
        found: set[int] = set()
        for group in (self.memory, self.pids):
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        return sorted(found)

    def kill_all(self) -> None:
        for pid in self.pids_in():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def empty(self, timeout_s: float = 5.0) -> bool:
        """Kills what is left and waits until no process is in either group (False: not in time)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.kill_all()
            if not self.pids_in():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)

    def remove(self, timeout_s: float = 5.0) -> bool:
        """Kills what is left and removes both groups; False if they would not go in time."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.kill_all()
            busy = False
            for group in (self.memory, self.pids):
                try:
                    group.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    busy = True
            if not busy:
                return True
            if time.monotonic() > deadline:
                log.warning("cgroup %s still busy after %.1f s", self.memory.name, timeout_s)
                return False
            time.sleep(0.01)


class CgroupManager:
    """Creates sandbox groups under this process's own memory and pids cgroups.

    Each manager has its own base group (`arbiter-code-<pid>-<n>`): two graders in one process
    (a service and a test's, or a judge pool beside SandboxFusion) never remove each other's.
    """

    _instances = itertools.count(1)

    def __init__(self, memory_root: Path, pids_root: Path) -> None:
        name = f"{_PREFIX}{os.getpid()}-{next(self._instances)}"
        self.base_memory = memory_root / name
        self.base_pids = pids_root / name
        self._counter = 0
        for root in (memory_root, pids_root):
            _remove_stale(root)
        self.base_memory.mkdir(exist_ok=True)
        self.base_pids.mkdir(exist_ok=True)

    @classmethod
    def detect(cls) -> CgroupManager | None:
        """A manager when cgroup v1 memory and pids are mounted and writable here, else None."""
        mounts, own = _v1_mounts(), _own_paths()
        if "memory" not in mounts or "pids" not in mounts:
            return None
        memory_root = mounts["memory"] / own.get("memory", "/").lstrip("/")
        pids_root = mounts["pids"] / own.get("pids", "/").lstrip("/")
        try:
            return cls(memory_root, pids_root)
        except OSError as exc:
            log.info("cgroup v1 present but not usable (%s); falling back to rlimits", exc)
            return None

    def create(self, memory_bytes: int, max_pids: int) -> SandboxCgroup:
        self._counter += 1
        name = f"sb-{self._counter}"
        group = SandboxCgroup(self.base_memory / name, self.base_pids / name)
        group.memory.mkdir()
        group.pids.mkdir()
        (group.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (group.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (group.pids / "pids.max").write_text(str(max_pids))
        return group

    def close(self) -> None:
        for base in (self.base_memory, self.base_pids):
            _remove_tree(base)


def _remove_tree(base: Path) -> None:
    if not base.is_dir():
        return
    for child in base.iterdir():
        if child.is_dir():
            SandboxCgroup(child, child).remove(timeout_s=2.0)
    with contextlib.suppress(OSError):
        base.rmdir()


def _remove_stale(root: Path) -> None:
    """Removes groups of graders (this process's prefix) whose process is gone."""
    with contextlib.suppress(OSError):
        for base in root.glob(f"{_PREFIX}*"):
            owner = base.name.removeprefix(_PREFIX).partition("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                _remove_tree(base)
