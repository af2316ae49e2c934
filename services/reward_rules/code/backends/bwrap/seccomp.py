"""The sandbox's seccomp filter: kernel interfaces no test program needs answer EPERM.

Namespaces hide the host, but every syscall still reaches the host kernel; these are the ones
with a record of privilege escalations or of reaching across processes: io_uring, keyrings,
bpf, perf events, ptrace and cross-process memory or fd access, module loading, mounts and
namespaces, kexec. Built once with libseccomp (PyPI `pyseccomp`, over the system's
libseccomp.so.2) and handed to bwrap (`--seccomp FD`), which loads it just before the harness
starts. Default action: allow; libseccomp also refuses foreign architectures (x32, i386).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import tempfile

log = logging.getLogger(__name__)

DENIED = (
    "shmget",  # SysV and POSIX IPC objects outlive their processes (a reused sandbox keeps them)
    "msgget",
    "semget",
    "mq_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "unshare",
    "setns",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    "syslog",
    "vhangup",
    "iopl",
    "ioperm",
)


@functools.cache
def filter_program() -> bytes | None:
    """The compiled BPF program, or None (logged) where libseccomp is not available."""
    try:
        import pyseccomp  # type: ignore[import-untyped]
    except (ImportError, OSError) as exc:  # OSError: the module loads libseccomp.so.2 on import
        log.warning("code sandbox: no seccomp filter (pyseccomp/libseccomp unavailable: %s)", exc)
        return None
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in DENIED:
        try:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError, OSError):
            log.debug("seccomp: syscall %s unknown here", name)  # older kernels' tables
    with tempfile.TemporaryFile() as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def filter_fd(program: bytes) -> int:
    """A fresh readable fd holding the program (bwrap reads it to the end: one fd per launch)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a few hundred bytes: far below a pipe's capacity
    finally:
        os.close(write_end)
    return read_end
