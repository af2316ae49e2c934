"""Per-sandbox cgroup v1 memory, pids and CPU limits, and the kill/cleanup that goes with them.

Every sandbox gets its own `memory` and `pids` cgroup under this process's own cgroups
(`.../arbiter-code-<pid>-<m>/sb-<n>`), so a memory bomb is stopped by the kernel's OOM killer
inside its group, a fork bomb by pids.max, and teardown can SIGKILL every process of the
group, whatever namespace it lives in. Where the `cpu` and `cpuacct` controllers are mounted
and writable, it also gets a `cpu` group with a CFS quota (`cpu_limit` CPUs: a program's many
threads or processes cannot take the machine from the other samples) and a `cpuacct` group
whose `cpuacct.usage` counts the CPU time of every process that ever ran in the sandbox
(daemons and unreaped children included): what its time limits are measured on (harness.py).
Without them the sandbox keeps memory and pids, and its time limits stay wall-clock (logged
once). Groups left behind by a grader that died are removed when the next one starts.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_PREFIX = "arbiter-code-"


class MemoryBelowUse(Exception):
    """A memory limit below what the sandbox's processes already hold (the kernel answers EBUSY):
    no program can run under it, so it is the run's memory verdict, never an infrastructure error."""


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
    """One sandbox's memory and pids groups, and its cpu and cpuacct groups where available
    (the same directory when the two controllers are mounted together)."""

    memory: Path
    pids: Path
    cpu: Path | None = None
    cpuacct: Path | None = None

    def groups(self) -> list[Path]:
        """Every directory of this sandbox's groups, once each."""
        found: list[Path] = []
        for group in (self.memory, self.pids, self.cpu, self.cpuacct):
            if group is not None and group not in found:
                found.append(group)
        return found

    @property
    def usage_file(self) -> Path | None:
        """cpuacct.usage: nanoseconds of CPU used by every process of the sandbox so far."""
        return None if self.cpuacct is None else self.cpuacct / "cpuacct.usage"

    def cpu_usage_ns(self) -> int | None:
        if self.cpuacct is None:
            return None
        try:
            return int((self.cpuacct / "cpuacct.usage").read_text())
        except (OSError, ValueError):
            return None

    def set_cpu_limit(self, cpus: float) -> None:
        """A CFS quota of `cpus` CPUs per period (0: none)."""
        if self.cpu is None:
            return
        quota = -1
        if cpus > 0:
            period = int((self.cpu / "cpu.cfs_period_us").read_text())
            quota = max(int(period * cpus), 1000)
        (self.cpu / "cpu.cfs_quota_us").write_text(str(quota))

    def set_memory_limit(self, memory_bytes: int) -> None:
        with contextlib.suppress(OSError):  # memsw must stay >= limit: raise it first, lower it last
            (self.memory / "memory.memsw.limit_in_bytes").write_text(str(max(memory_bytes, self._limit())))
        try:
            (self.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise MemoryBelowUse(
                    f"a memory limit of {memory_bytes >> 20} MB is below what the sandbox holds"
                ) from None
            raise
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
        for group in self.groups():
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
            for group in self.groups():
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


_cpu_warned: list[bool] = []


def _warn_cpu_once(reason: str) -> None:
    if not _cpu_warned:
        _cpu_warned.append(True)
        log.warning(
            "code sandbox: no usable cgroup v1 cpu/cpuacct controllers (%s): no per-sandbox CPU share, "
            "and time limits are wall-clock",
            reason,
        )


class CgroupManager:
    """Creates sandbox groups under this process's own memory, pids (and cpu, cpuacct) cgroups.

    Each manager has its own base group (`arbiter-code-<pid>-<n>`): two graders in one process
    (a service and a test's, or a judge pool beside SandboxFusion) never remove each other's.
    """

    _instances = itertools.count(1)

    def __init__(
        self,
        memory_root: Path,
        pids_root: Path,
        cpu_root: Path | None = None,
        cpuacct_root: Path | None = None,
    ) -> None:
        name = f"{_PREFIX}{os.getpid()}-{next(self._instances)}"
        self.base_memory = memory_root / name
        self.base_pids = pids_root / name
        self._counter = 0
        for root in (memory_root, pids_root):
            _remove_stale(root)
        self.base_memory.mkdir(exist_ok=True)
        self.base_pids.mkdir(exist_ok=True)
        self.base_cpu: Path | None = None
        self.base_cpuacct: Path | None = None
        if cpu_root is not None and cpuacct_root is not None:
            try:
                for root in {cpu_root, cpuacct_root}:
                    _remove_stale(root)
                    (root / name).mkdir(exist_ok=True)
                if not (cpu_root / name / "cpu.cfs_quota_us").exists():
                    raise OSError("no cpu.cfs_quota_us")
                self.base_cpu, self.base_cpuacct = cpu_root / name, cpuacct_root / name
            except OSError as exc:
                for root in {cpu_root, cpuacct_root}:
                    _remove_tree(root / name)
                _warn_cpu_once(str(exc))
        else:
            _warn_cpu_once("not mounted")

    @classmethod
    def detect(cls) -> CgroupManager | None:
        """A manager when cgroup v1 memory and pids are mounted and writable here, else None."""
        mounts, own = _v1_mounts(), _own_paths()
        if "memory" not in mounts or "pids" not in mounts:
            return None
        memory_root = mounts["memory"] / own.get("memory", "/").lstrip("/")
        pids_root = mounts["pids"] / own.get("pids", "/").lstrip("/")
        cpu_root = cpuacct_root = None
        if "cpu" in mounts and "cpuacct" in mounts:
            cpu_root = mounts["cpu"] / own.get("cpu", "/").lstrip("/")
            cpuacct_root = mounts["cpuacct"] / own.get("cpuacct", "/").lstrip("/")
        try:
            return cls(memory_root, pids_root, cpu_root, cpuacct_root)
        except OSError as exc:
            log.info("cgroup v1 present but not usable (%s); falling back to rlimits", exc)
            return None

    def create(self, memory_bytes: int, max_pids: int, cpus: float = 0.0) -> SandboxCgroup:
        self._counter += 1
        name = f"sb-{self._counter}"
        cpu = None if self.base_cpu is None else self.base_cpu / name
        cpuacct = None if self.base_cpuacct is None else self.base_cpuacct / name
        group = SandboxCgroup(self.base_memory / name, self.base_pids / name, cpu, cpuacct)
        for directory in group.groups():
            directory.mkdir()
        (group.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (group.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (group.pids / "pids.max").write_text(str(max_pids))
        group.set_cpu_limit(cpus)
        return group

    def close(self) -> None:
        for base in (self.base_memory, self.base_pids, self.base_cpu, self.base_cpuacct):
            if base is not None:
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
