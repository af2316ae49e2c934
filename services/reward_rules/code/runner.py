"""Language runners: what process the sandbox starts and which test kinds it can serve.

A runner starts a harness that speaks the frame protocol of harness.py on fd 0/1. Python's
harness serves every test kind, and C++ stdio tests too: it runs g++ and the compiled binary
itself (native.py), so every sandbox runs this one harness.
"""

from __future__ import annotations

import subprocess
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

    def argv(self) -> list[str]:
        """The harness command inside the sandbox (absolute paths under the read-only system)."""
        ...


@cache
def harness_source() -> str:
    return (Path(__file__).with_name("harness.py")).read_text()


# base64, not hex: one argv string may hold 128 KiB (MAX_ARG_STRLEN), and the harness's bytecode
# is over 64 KiB
_BOOTSTRAP = "import marshal,binascii;exec(marshal.loads(binascii.a2b_base64({!r})))"
_COMPILE = (
    "import marshal,sys,binascii;"
    "sys.stdout.write(binascii.b2a_base64(marshal.dumps(compile(sys.stdin.read(),'harness','exec')),newline=False).decode())"
)


@dataclass
class PythonRunner:
    """Runs the harness on the system interpreter: isolated mode, no bytecode files.

    `prepare()` has that interpreter compile the harness once, outside any sandbox, so each
    sandbox loads bytecode instead of parsing source (a few ms of every start).
    """

    interpreter: str = "/usr/bin/python3"
    site: bool = False  # importing site finds dist-packages; off it starts faster
    _code: str = field(default="", repr=False)  # the harness's bytecode, base64

    @property
    def name(self) -> str:
        return "python"

    @property
    def function_tests(self) -> bool:
        return True

    def prepare(self) -> None:
        if self._code:
            return
        try:
            done = subprocess.run(
                [self.interpreter, "-I", "-S", "-B", "-c", _COMPILE],
                input=harness_source(),
                capture_output=True,
                text=True,
                timeout=60,
                env={},
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise RuntimeError(f"cannot run the sandbox interpreter {self.interpreter}: {exc}") from exc
        self._code = done.stdout.strip()

    def argv(self) -> list[str]:
        flags = ["-I", "-B"] + ([] if self.site else ["-S"])
        program = _BOOTSTRAP.format(self._code) if self._code else harness_source()
        return [self.interpreter, *flags, "-c", program]
