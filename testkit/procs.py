"""Run a service in a child process and wait until it is ready: for benchmarks, tests and scripts
that need a real server in its own process (its own GIL, its own event loop)."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import httpx


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ServiceProcess:
    """`with ServiceProcess(argv, ready_url) as proc:` starts, waits for a 200, stops on exit."""

    def __init__(
        self,
        argv: Sequence[str],
        ready_url: str,
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = 60.0,
        stop_signal: int = signal.SIGTERM,
        output: int | IO[Any] | None = subprocess.DEVNULL,
    ) -> None:
        self.argv = list(argv)
        self.ready_url = ready_url
        self.env = dict(env) if env is not None else None
        self.start_timeout_s = start_timeout_s
        self.stop_signal = stop_signal
        self.output = output
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> ServiceProcess:
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=self.output, stderr=self.output)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{' '.join(self.argv)} exited with {self.proc.returncode} before it was ready"
                )
            try:
                if httpx.get(self.ready_url, timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError(
            f"{' '.join(self.argv)} was not ready at {self.ready_url} after {self.start_timeout_s}s"
        )

    def stop(self, timeout_s: float = 30.0) -> int:
        """Stop gracefully (then kill); return the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def wait_for_port(port: int, host: str = "127.0.0.1", timeout_s: float = 10.0) -> None:
    """Return once something accepts connections on host:port; RuntimeError after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on {host}:{port} after {timeout_s}s") from None
            time.sleep(0.05)


def start_redis(port: int, workdir: Path | None = None) -> subprocess.Popen[bytes]:
    """A throwaway redis-server (no persistence) on 127.0.0.1:port, already answering."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed: apt-get install redis-server")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    if workdir is not None:
        argv += ["--dir", str(workdir)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
    except RuntimeError:
        proc.kill()
        raise RuntimeError("redis-server did not start") from None
    return proc


def children(pid: int) -> list[int]:
    """A live process's direct children (none once it has gone)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its children (worker pools), in MiB."""
    total = 0.0
    for p in [pid, *children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except FileNotFoundError:  # a child that just exited
            continue
    return total


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
