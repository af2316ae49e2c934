"""One sandboxed harness process: bubblewrap launch, limits, framed requests with deadlines, kill.

The launcher is exec'd with an empty environment (so the sandbox's pid 1 has nothing to show
in /proc/1/environ) after moving itself into the sandbox's cgroups and, when the grader is
root, dropping to an unprivileged host uid; bwrap then builds fresh user, pid, net, ipc, uts
and mount namespaces with the system read-only and a size-capped tmpfs as the work dir, and
loads a seccomp filter (seccomp.py) before the harness starts.
Every read from the sandbox polls its stderr too, so a chatty candidate never blocks on a
full pipe, and keeps only a capped tail of it. The grader kills from outside: SIGKILL to
bwrap (its pid namespace dies with it) and to every process left in the cgroups.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Literal

from services.reward_rules.code.backends.bwrap.cgroups import SandboxCgroup
from services.reward_rules.code.backends.bwrap.seccomp import filter_fd
from services.reward_rules.code.runner import LanguageRunner

_HEADER = struct.Struct(">I")
SANDBOX_UID = 1000  # the candidate's uid inside the sandbox's user namespace
_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
_STDERR_TAIL = 8192
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")

Mode = Literal["bwrap", "unsafe"]


class SandboxError(Exception):
    """The sandbox failed to answer; `kind` says how: died, timeout, protocol, oversize."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    max_pids: int
    tmpfs_bytes: int
    max_frame_bytes: int
    cpu_limit: float = 0.0  # CPUs per sandbox (a CFS quota, where the cpu controller is there); 0: none
    ro_paths: tuple[str, ...] = ()  # more host directories bound read-only (toolchains: languages.py)


def parse_frame(body: bytes, what: str = "reply") -> dict[str, Any]:
    """A frame's JSON object; a sandbox that sends anything else broke the protocol."""
    try:
        reply = json.loads(body)
    except (ValueError, RecursionError):
        raise SandboxError("protocol", f"{what} is not JSON") from None
    if not isinstance(reply, dict):
        raise SandboxError("protocol", f"{what} is not an object")
    return reply


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


# Has a reused sandbox's harness (the zygote) fork the process that serves one sample: the fork
# reads the sample's frames, the zygote never does (harness.fork_sample). Answered at the sample's
# end (its `reset` or `end`), by the zygote, once the fork has exited and been cleaned up after.
SAMPLE_OP = b'{"op":"sample"}'
CPU_OVER = "over the CPU time limit"
CPU_POLL_S = 0.02  # how often a function test's CPU time is read while it waits for a reply
CPU_USAGE_PATH = "/run/cpu_usage"  # in the sandbox: its cgroup's cpuacct.usage, read-only


def bwrap_argv(
    bwrap: str,
    runner: LanguageRunner,
    limits: Limits,
    seccomp_fd: int | None = None,
    cpu_usage: str | None = None,
) -> list[str]:
    argv = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--disable-userns",
    ]
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for path in _SYSTEM_DIRS:  # merged-/usr systems have these as symlinks into /usr
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for path in _SYSTEM_FILES:
        argv += ["--ro-bind-try", path, path]
    for path in limits.ro_paths:  # a toolchain's files outside /usr, the C++ precompiled headers
        argv += ["--ro-bind-try", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    if cpu_usage is not None:  # the harness times runs on the CPU the whole sandbox used
        argv += ["--ro-bind", cpu_usage, CPU_USAGE_PATH]
    for host, inside in runner.binds():  # the harness itself: a file, never the command line
        argv += ["--ro-bind", host, inside]
    argv += ["--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp", "--remount-ro", "/", "--chdir", "/tmp"]
    argv += ["--clearenv"]
    for key, value in _ENV.items():
        argv += ["--setenv", key, value]
    argv += ["--setenv", "ARBITER_SANDBOX", "bwrap"]  # the harness may kill(-1) only in here
    if cpu_usage is not None:
        argv += ["--setenv", "ARBITER_CPU_USAGE", CPU_USAGE_PATH]  # the harness unsets it
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--", *runner.argv()]


# The launcher: a POSIX shell that joins the sandbox's cgroups, sets rlimits and, when the grader
# is root, drops to an unprivileged uid, then execs bwrap. A shell rather than a Python
# preexec_fn so that the grader can vfork: forking a large server process costs milliseconds.
_LAUNCHER = """\
if [ -n "$ARBITER_MEMCG" ]; then
  echo $$ > "$ARBITER_MEMCG/cgroup.procs" && echo $$ > "$ARBITER_PIDSCG/cgroup.procs" || exit 125
fi
for group in "$ARBITER_CPUCG" "$ARBITER_ACCTCG"; do
  [ -z "$group" ] || echo $$ > "$group/cgroup.procs" || exit 125
done
ulimit -c 0 && ulimit -f "$ARBITER_FSIZE_BLOCKS" || exit 125  # 512-byte blocks (POSIX sh)
if [ -n "$ARBITER_AS_KB" ]; then ulimit -v "$ARBITER_AS_KB" && ulimit -p "$ARBITER_NPROC" || exit 125; fi
uid=$ARBITER_UID
unset ARBITER_MEMCG ARBITER_PIDSCG ARBITER_CPUCG ARBITER_ACCTCG ARBITER_FSIZE_BLOCKS ARBITER_AS_KB
unset ARBITER_NPROC ARBITER_UID PWD OLDPWD
[ -z "$uid" ] || exec /usr/bin/setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
exec "$@"
"""


def launcher_argv(
    argv: list[str], cgroup: SandboxCgroup | None, host_uid: int, limits: Limits
) -> tuple[list[str], dict[str, str]]:
    """The shell command and environment that start `argv` inside the limits; nothing else passes."""
    extra = [] if cgroup is None else [g for g in cgroup.groups() if g not in (cgroup.memory, cgroup.pids)]
    env = {
        "ARBITER_MEMCG": "" if cgroup is None else str(cgroup.memory),
        "ARBITER_PIDSCG": "" if cgroup is None else str(cgroup.pids),
        "ARBITER_CPUCG": str(extra[0]) if extra else "",
        "ARBITER_ACCTCG": str(extra[1]) if len(extra) > 1 else "",
        "ARBITER_FSIZE_BLOCKS": str(limits.tmpfs_bytes >> 9),
        "ARBITER_AS_KB": "" if cgroup is not None else str(limits.memory_bytes >> 10),
        "ARBITER_NPROC": str(limits.max_pids),
        "ARBITER_UID": str(host_uid) if os.getuid() == 0 else "",
    }
    return ["/bin/sh", "-c", _LAUNCHER, "arbiter-sandbox", *argv], env


class Sandbox:
    """A started harness; `request()` sends a frame and waits for the reply by a deadline."""

    def __init__(
        self,
        runner: LanguageRunner,
        limits: Limits,
        *,
        mode: Mode,
        bwrap: str | None,
        cgroup: SandboxCgroup | None,
        host_uid: int,
        seccomp: bytes | None = None,
    ) -> None:
        self.limits = limits
        self.cgroup = cgroup
        self._oom_base = cgroup.oom_kills() if cgroup is not None else 0  # a reused group counts on
        self.stderr_tail = bytearray()
        self.stderr_bytes = 0
        self._buffer = bytearray()
        self._ready = False
        self._workdir: str | None = None
        self.cpu_watch: tuple[int, int] | None = None  # (usage at the start, limit) in ns: see _poll
        seccomp_fd: int | None = None
        usage = cgroup.usage_file if cgroup is not None else None
        self.cpu_timed = usage is not None  # the harness times runs on CPU (else on the wall clock)
        if mode == "bwrap":
            if bwrap is None:
                raise SandboxError("start", "bubblewrap (bwrap) is not installed")
            seccomp_fd = filter_fd(seccomp) if seccomp is not None else None
            cpu_usage = None if usage is None else str(usage)
            argv, cwd = bwrap_argv(bwrap, runner, limits, seccomp_fd, cpu_usage), "/"
        else:
            self._workdir = tempfile.mkdtemp(prefix="arbiter-code-unsafe-")
            if os.getuid() == 0:
                os.chown(self._workdir, host_uid, host_uid)
            argv, cwd = runner.argv(sandboxed=False), self._workdir
        command, env = launcher_argv(argv, cgroup, host_uid, limits)
        if mode == "unsafe":
            env.update(_ENV)
            if usage is not None:
                env["ARBITER_CPU_USAGE"] = str(usage)
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                close_fds=True,
                pass_fds=() if seccomp_fd is None else (seccomp_fd,),
            )
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self._ctl_in = self.process.stdin.fileno()
        self._ctl_out = self.process.stdout.fileno()
        self._err: int | None = self.process.stderr.fileno()
        for fd in (self._ctl_in, self._ctl_out, self._err):
            os.set_blocking(fd, False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def oom_kills(self) -> int:
        return self.cgroup.oom_kills() - self._oom_base if self.cgroup is not None else 0

    def cpu_usage_ns(self) -> int | None:
        """CPU time every process of the sandbox used so far (its cpuacct group), if known."""
        return self.cgroup.cpu_usage_ns() if self.cgroup is not None else None

    def stderr_text(self) -> str:
        return self.stderr_tail.decode("utf-8", "replace")

    def wait_ready(self, deadline: float) -> None:
        if not self._ready:
            reply = self._receive(deadline)
            if reply.get("ready") is not True:
                raise SandboxError("protocol", "the harness did not start")
            self._ready = True

    def request(
        self, message: dict[str, Any], deadline: float, max_reply: int | None = None
    ) -> dict[str, Any]:
        """Sends a request; its reply decoded (a reply over `max_reply` bytes is never read)."""
        body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode()
        return parse_frame(self.request_raw(body, deadline, max_reply))

    def request_raw(self, body: bytes, deadline: float, max_reply: int | None = None) -> bytes:
        """Sends a frame body, returns the reply's body unread: what a relay forwards as it came."""
        self.wait_ready(deadline)
        self.send_raw(body, deadline)
        return self.receive_raw(deadline, max_reply)

    def send_raw(self, body: bytes, deadline: float) -> None:
        self._send(_HEADER.pack(len(body)) + body, deadline)

    def receive_raw(self, deadline: float, max_reply: int | None = None) -> bytes:
        limit = (
            self.limits.max_frame_bytes if max_reply is None else min(max_reply, self.limits.max_frame_bytes)
        )
        while True:
            body = self._take_body(limit)
            if body is not None:
                return body
            self._read_some(deadline)

    def _poll(self, fd: int, event: int, deadline: float) -> bool:
        """Waits for `event` on fd while draining stderr; False when only stderr moved."""
        poller = select.poll()
        poller.register(fd, event)
        if self._err is not None:
            poller.register(self._err, select.POLLIN)
        left = deadline - time.monotonic()
        if left <= 0:
            raise SandboxError("timeout", "deadline passed")
        if self.cpu_watch is not None:  # a function test's CPU time: the program runs in the harness
            usage = self.cpu_usage_ns()
            if usage is not None and usage - self.cpu_watch[0] > self.cpu_watch[1]:
                raise SandboxError("timeout", CPU_OVER)
            left = min(left, CPU_POLL_S)
        ready = False
        for ready_fd, _ in poller.poll(left * 1000):
            if ready_fd == self._err:
                self._drain_stderr()
            else:
                ready = True
        return ready

    def _drain_stderr(self) -> None:
        assert self._err is not None
        with contextlib.suppress(BlockingIOError):
            chunk = os.read(self._err, 1 << 16)
            if not chunk:
                self._err = None
                return
            self.stderr_bytes += len(chunk)
            self.stderr_tail += chunk
            del self.stderr_tail[:-_STDERR_TAIL]

    def _send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            if not self._poll(self._ctl_in, select.POLLOUT, deadline):
                continue
            try:
                view = view[os.write(self._ctl_in, view) :]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise SandboxError("died", "the sandbox exited") from None

    def _take_body(self, limit: int) -> bytes | None:
        if len(self._buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self._buffer)
        if size > limit:
            raise SandboxError("oversize", f"reply of {size} bytes is over the limit of {limit}")
        if len(self._buffer) < _HEADER.size + size:
            return None
        body = bytes(self._buffer[_HEADER.size : _HEADER.size + size])
        del self._buffer[: _HEADER.size + size]
        return body

    def _receive(self, deadline: float) -> dict[str, Any]:
        return parse_frame(self.receive_raw(deadline))

    def _read_some(self, deadline: float) -> None:
        if not self._poll(self._ctl_out, select.POLLIN, deadline):
            return
        try:
            chunk = os.read(self._ctl_out, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            while self._err is not None:  # its last words, for the detail
                if not self._poll_stderr_only():
                    break
            raise SandboxError("died", "the sandbox exited")
        self._buffer += chunk

    def _poll_stderr_only(self) -> bool:
        if self._err is None:
            return False
        poller = select.poll()
        poller.register(self._err, select.POLLIN)
        if not poller.poll(50):
            return False
        self._drain_stderr()
        return True

    def kill(self) -> None:
        """SIGKILLs the sandbox and everything in its cgroups; closes the pipes; reaps bwrap."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        if self.cgroup is not None:
            self.cgroup.kill_all()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


def proven_clean(sandbox: Sandbox, op: bytes, baseline: int, oom_before: int, timeout_s: float) -> bool:
    """Ends a sample in a reused sandbox (`op`: the harness's end/reset) and proves only the
    sandbox's own resident process is left to answer, before the sandbox serves another sample.

    Anything the sample's code wrote on the pipe (a forged reply, answers written ahead for the
    next sample) is read and dropped: only a pong carrying a nonce sent once the cgroup was back
    to `baseline` processes counts, and nothing else can then have read the nonce. A memory kill
    during the sample (`oom_before` changed) or a harness that reports itself unclean fails it.
    """
    cgroup = sandbox.cgroup
    assert cgroup is not None
    deadline = time.monotonic() + timeout_s
    try:
        sandbox.send_raw(op, deadline)
        while len(cgroup.pids_in()) > baseline:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        nonce = secrets.token_hex(16)
        sandbox.send_raw(json.dumps({"op": "ping", "nonce": nonce}).encode(), deadline)
        for _ in range(64):
            try:
                reply = json.loads(sandbox.receive_raw(deadline, 1 << 16))
            except (ValueError, RecursionError):
                continue
            if isinstance(reply, dict) and reply.get("pong") == nonce:
                return reply.get("clean") is True and sandbox.oom_kills() == oom_before
    except SandboxError:
        return False
    return False
