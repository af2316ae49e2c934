"""A tiny fork server for math workers: `python -m services.reward_rules.math.zygote FD`.

Why not multiprocessing's forkserver: its children re-run the parent's `__main__`
script (a CLI, a server, a benchmark) before they start, which costs seconds per
replacement worker and runs unguarded scripts twice. This process imports only the
grading code (sympy included) once, then forks a worker per request in milliseconds
and hands the parent the worker's socket and a pidfd for it over SCM_RIGHTS. It is
single-threaded, so fork is safe here, and it exits when the parent's control socket closes.

Why a pidfd: exited workers are reaped by the kernel at once (SIGCHLD ignored), so a worker's
pid is free for any new process the moment it dies; a parent that kills "the worker" by pid
later may kill a stranger. A pidfd always names the one process it was opened for.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from multiprocessing.connection import Connection

from services.reward_rules.math.protocol import FORK_REQUEST as REQUEST
from services.reward_rules.math.worker import worker_main

__all__ = ["main"]


def _serve(control: socket.socket) -> None:
    while True:
        try:
            request = control.recv(REQUEST.size)
        except OSError:
            return
        if len(request) != REQUEST.size:
            return  # the parent closed the control socket: it is gone
        (memory_mb,) = REQUEST.unpack(request)
        parent_end, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                parent_end.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                worker_main(Connection(child_end.detach()), memory_mb)
            finally:
                os._exit(0)
        child_end.close()
        # Opened before the worker can have exited: it waits on its socket for a first job.
        pidfd = _pidfd(pid)
        fds = [parent_end.fileno()] if pidfd is None else [parent_end.fileno(), pidfd]
        try:
            socket.send_fds(control, [REQUEST.pack(pid)], fds)
        except OSError:
            os.kill(pid, signal.SIGKILL)
            return
        finally:
            parent_end.close()
            if pidfd is not None:
                os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    """A pidfd for `pid`; None where the kernel (or a seccomp filter) has no pidfd_open."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    # Exited workers are reaped by the kernel; the parent only ever kills them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = socket.socket(fileno=int(args[0]))
    _serve(control)


if __name__ == "__main__":
    main()
