"""Precompiled headers for C++ programs: `<bits/stdc++.h>` parsed once per host, not per compile.

A competitive-programming source is a few dozen lines after `#include <bits/stdc++.h>`; g++ spends
most of a fresh compile parsing that header (bench/bench_compile.py measures it). GCC loads a
precompiled header (`bits/stdc++.h.gch`) instead when one built with the same flags lies in an
include directory searched before the system's: this module builds one, on the host and once per
(compiler, flags), in a directory that sandboxes bind read-only (`Limits.ro_paths`), and the
compile command gets `-I <that directory>`.

Nothing changes what a program means: GCC uses the precompiled header only where it is valid
(the same flags; the include the source's first; no macro defined before it that it uses) and
otherwise reads the header itself from the next include directory, so every source compiles as
it did. Building is trusted work (system headers only) done in a background thread at the
grader's start; until it is done, compiles run without it. The directory is per host user
(`/var/tmp/arbiter-pch-<uid>`, or the setting `reward_rules.code.pch_dir`), kept across
restarts, and used only when it is this user's own and nobody else may write to it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

HEADERS = ("bits/stdc++.h", "iostream")  # the includes competitive-programming sources start with
BUILD_TIMEOUT_S = 600.0
_READY = ".ready"


def default_root() -> Path:
    return Path(f"/var/tmp/arbiter-pch-{os.getuid()}")


def _own_private(path: Path) -> bool:
    """A real directory of this user that nobody else may write to (else it is not trusted)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


class PrecompiledHeaders:
    """The precompiled headers for one compiler and flag set: `include_flags()` once built."""

    def __init__(self, cxx: str, flags: list[str], root: Path | None = None) -> None:
        self.cxx = cxx
        self.flags = list(flags)
        self.root = root or default_root()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.error = ""
        identity = [os.path.realpath(cxx), *self.flags, *HEADERS]
        with contextlib.suppress(OSError):
            identity.append(str(os.stat(os.path.realpath(cxx)).st_mtime_ns))
        self.directory = self.root / hashlib.sha256("\0".join(identity).encode()).hexdigest()[:20]

    def usable_root(self) -> Path | None:
        """The directory to bind into sandboxes (made if need be), None where it cannot be trusted."""
        with contextlib.suppress(OSError):
            self.root.mkdir(mode=0o755, parents=True, exist_ok=True)
        return self.root if _own_private(self.root) else None

    def ready(self) -> bool:
        return _own_private(self.root) and (self.directory / _READY).is_file()

    def include_flags(self) -> list[str]:
        """`-I <dir>` for the compile command once the headers are built; [] until then."""
        return ["-I", str(self.directory)] if self.ready() else []

    def start(self) -> None:
        """Builds them in a background thread, unless they are built (or being built) already."""
        with self._lock:
            if self._thread is not None or not os.access(self.cxx, os.X_OK):
                return
            self._thread = threading.Thread(target=self._build_logged, name="code-pch", daemon=True)
            self._thread.start()

    def wait(self, timeout_s: float = BUILD_TIMEOUT_S) -> bool:
        """Waits for a build under way (tests and benches); whether the headers are ready."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
        return self.ready()

    def _build_logged(self) -> None:
        try:
            self.build()
        except Exception as exc:  # a background thread: say it, compiles go on without
            self.error = str(exc)[:500]
            log.warning("code grader: no precompiled C++ headers (%s)", self.error)

    def build(self, block: bool = False) -> None:
        """Builds them unless built; `block`: waits for another process's build rather than leave
        it to that process (the background thread does not wait)."""
        if self.ready():
            _warm(self.directory)
            return
        root = self.usable_root()
        if root is None:
            raise RuntimeError(f"{self.root} is not a directory of this user's that only it may write")
        lock = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
            except BlockingIOError:
                return  # another process builds them; this one's compiles go without until then
            if not self.ready():
                for stale in root.glob(".build-*"):  # what a process that died while building left
                    shutil.rmtree(stale, ignore_errors=True)
                self._build_locked(root)
        finally:
            os.close(lock)
        _warm(self.directory)

    def _build_locked(self, root: Path) -> None:
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            os.chmod(work, 0o755)
            for header in HEADERS:
                self._compile(work, header)
            (work / _READY).write_text(" ".join([self.cxx, *self.flags]) + "\n")
            for path in [work, *work.rglob("*")]:
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            os.rename(work, self.directory)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _compile(self, work: Path, header: str) -> None:
        """`header` precompiled as `<work>/<header>.gch`, proven to be used by a compile."""
        target = work / f"{header}.gch"
        target.parent.mkdir(parents=True, exist_ok=True)
        wrapper = work / ".wrapper.h"
        wrapper.write_text(f"#include <{header}>\n")
        argv = [self.cxx, *self.flags, "-x", "c++-header", str(wrapper), "-o", str(target)]
        subprocess.run(argv, check=True, capture_output=True, timeout=BUILD_TIMEOUT_S, env=_env())
        wrapper.unlink()
        probe = work / ".probe.cpp"
        probe.write_text(f"#include <{header}>\nint main() {{ return 0; }}\n")
        argv = [self.cxx, *self.flags, "-I", str(work), "-H", "-fsyntax-only", str(probe)]
        done = subprocess.run(argv, capture_output=True, timeout=BUILD_TIMEOUT_S, env=_env(), text=True)
        probe.unlink()
        if f"! {target}" not in done.stderr:
            target.unlink()
            raise RuntimeError(f"g++ does not use the precompiled {header} with {self.flags}")


def _env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": tempfile.gettempdir()}


def _warm(directory: Path) -> None:
    """Reads the headers once, so that their pages are in memory (charged to this process's
    group, not to the first sandbox that maps them: that would count against its memory limit)."""
    for path in directory.rglob("*.gch"):
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            while handle.read(1 << 22):
                pass
