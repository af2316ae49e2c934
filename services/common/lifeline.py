"""A child process that must not outlive its parent (Linux: prctl PR_SET_PDEATHSIG)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """Have the kernel send `sig` to this process when its parent dies, SIGKILL included; exit at
    once when `parent` (the pid it was started by) is gone already (before the request took)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent:
        os._exit(1)
