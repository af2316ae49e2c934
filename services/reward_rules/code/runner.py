"""Language runners: what process the sandbox starts and which test kinds it can serve.

A runner starts a harness that speaks the frame protocol of harness.py on fd 0/1. Python's
harness serves every test kind, and C++ stdio tests too: it runs g++ and the compiled binary
itself (native.py), so every sandbox runs this one harness.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import weakref
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Protocol


class LanguageRunner(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def function_tests(self) -> bool:
        """Whether `assert`, `check` and `call` tests work (they need calls into the program)."""
        ...

    def prepare(self) -> None:
        """One-time set-up outside the sandbox (e.g. compiling the harness); may raise."""
        ...

    def binds(self) -> list[tuple[str, str]]:
        """Host files the harness needs, as (host path, sandbox path): bound read-only."""
        ...

    def argv(self, sandboxed: bool = True) -> list[str]:
        """The harness command: inside the sandbox (absolute paths under the read-only system and
        the `binds()` targets), or on the host (`sandboxed` False: unsafe mode, host paths)."""
        ...


@cache
def harness_source() -> str:
    return (Path(__file__).with_name("harness.py")).read_text()


HARNESS_PATH = "/run/arbiter-harness"  # in the sandbox: the harness's bytecode, bound read-only
# The command line only names the file: its size does not grow with the harness (one argv string
# may hold 128 KiB, MAX_ARG_STRLEN; the harness's bytecode as base64 was over 100 KiB of it).
_BOOTSTRAP = "import marshal;exec(marshal.loads(open({!r},'rb').read()))"
_COMPILE = (
    "import marshal,sys;sys.stdout.buffer.write(marshal.dumps(compile(sys.stdin.read(),'harness','exec')))"
)


def _remove(directory: str, owner: int) -> None:
    """Removes the harness's directory, in the process that made it only (never in a fork)."""
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)


@dataclass
class PythonRunner:
    """Runs the harness on the system interpreter: isolated mode, no bytecode files.

    `prepare()` has that interpreter compile the harness once, outside any sandbox, into a
    read-only file of a private directory, which each sandbox binds read-only at HARNESS_PATH:
    a sandbox loads bytecode instead of parsing source (a few ms of every start), and the command
    line stays a few hundred bytes however large the harness grows.
    """

    interpreter: str = "/usr/bin/python3"
    site: bool = False  # importing site finds dist-packages; off it starts faster
    _file: str = field(default="", repr=False)  # the harness's bytecode on the host

    @property
    def name(self) -> str:
        return "python"

    @property
    def function_tests(self) -> bool:
        return True

    def prepare(self) -> None:
        if self._file:
            return
        try:
            done = subprocess.run(
                [self.interpreter, "-I", "-S", "-B", "-c", _COMPILE],
                input=harness_source().encode(),
                capture_output=True,
                timeout=60,
                env={},
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise RuntimeError(f"cannot run the sandbox interpreter {self.interpreter}: {exc}") from exc
        directory = tempfile.mkdtemp(prefix="arbiter-harness-")
        weakref.finalize(self, _remove, directory, os.getpid())
        path = os.path.join(directory, "harness.bin")
        with open(path, "xb") as handle:
            handle.write(done.stdout)
        os.chmod(path, 0o444)
        os.chmod(directory, 0o755)  # a root grader's sandboxes run as an unprivileged uid
        self._file = path

    def binds(self) -> list[tuple[str, str]]:
        self.prepare()
        return [(self._file, HARNESS_PATH)]

    def argv(self, sandboxed: bool = True) -> list[str]:
        self.prepare()
        flags = ["-I", "-B"] + ([] if self.site else ["-S"])
        program = _BOOTSTRAP.format(HARNESS_PATH if sandboxed else self._file)
        return [self.interpreter, *flags, "-c", program]
