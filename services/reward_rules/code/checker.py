"""Checker programs from the label: C++ called as testlib's checkers are, in a sandbox of their own.

`"checker": "testlib"` gives the checker's C++ source in `checker_code`: a testlib checker, or any
program that reads the three files named on its command line, `checker input output answer` (the
test's input, the candidate's output, the label's expected output). It is built like a candidate
(g++ in a sandbox, once per distinct source through the compile cache; testlib.h is put beside the
source when it includes it and the host has one) and runs in a sandbox of its own that never holds
the candidate: the candidate's output goes in as a file, the verdict comes back as an exit status.

Exit statuses are testlib's: 0 accepted; 1 wrong answer; 2 presentation error (a wrong answer
too); 3 the checker failed (testlib's FAIL: a jury error, such as a participant's answer better
than the jury's). A FAIL is put to the test: the checker runs again with the label's own answer as
the output, with the test's whole time limit (not what is left of the sample's budget, which the
candidate spends: a run that slept through it left a re-run too little time to finish). If it
accepts that, the candidate's output caused the FAIL: a wrong answer. If it finishes and does not,
the label is broken: INVALID_INPUT, whatever the candidate printed (so a candidate cannot turn its
wrong answer into an unscored sample by making a sloppy checker fail). A re-run that does not
finish (a timeout: the candidate's next test runs meanwhile and may take the CPUs; its sandbox
failing) proves nothing against the label: the FAIL stays a wrong answer. Any other status, a crash,
or a timeout or memory kill on the candidate's output fails that test (wrong answer, timeout,
memory limit): breaking the checker never passes a test. A checker that does not compile is the
label's error (INVALID_INPUT); a missing compiler, or a testlib.h the host lacks, the grader's
(GRADER_ERROR).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from services.reward_rules.code.backends.base import SandboxSource
from services.reward_rules.code.labelrun import LabelError, Verdict
from services.reward_rules.code.native import NativeBuild, prepare_binary
from services.reward_rules.code.session import (
    MEMORY,
    TIMEOUT,
    WALL_CLOCK,
    WRONG,
    CandidateFailure,
    InfrastructureError,
    Session,
    StdioRun,
    TimeRule,
    last_line,
)

ACCEPTED, WRONG_ANSWER, PRESENTATION_ERROR, FAIL = 0, 1, 2, 3
FILES = ["input.txt", "output.txt", "answer.txt"]  # its argv, in testlib's order
DEFAULT_HEADERS = ("/usr/local/include/testlib.h", "/usr/include/testlib.h")
_INCLUDES_TESTLIB = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]testlib\.h[>"]', re.MULTILINE)
_REPORT_BYTES = 64 << 10  # what a checker prints: only its last line is read


def testlib_header(configured: str) -> str | None:
    """testlib.h's text: from the configured path, else from the usual include dirs; None if absent."""
    for path in (configured,) if configured else DEFAULT_HEADERS:
        try:
            return Path(path).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
    return None


@dataclass(frozen=True)
class CheckerSetup:
    """Where checker programs run and how they are built."""

    source: SandboxSource  # their sandboxes (the stdio ones: reused once proven clean)
    build: NativeBuild
    max_restarts: int
    testlib_header: str = ""  # a path; empty: DEFAULT_HEADERS
    time_rule: TimeRule = WALL_CLOCK  # how a checker run's time limit is measured


class NativeChecker:
    """One sample's checker program: compiled once (`prepare`), then run on each test's output."""

    def __init__(self, setup: CheckerSetup, code: str, memory_bytes: int, time_limit_s: float) -> None:
        self.setup = setup
        self.time_limit_s = time_limit_s  # a test's: what a re-run on the label's answer gets
        self.session = Session(
            setup.source, code, memory_bytes, setup.max_restarts, "__main__", time_rule=setup.time_rule
        )

    def prepare(self) -> None:
        """Compiles the checker, or takes it from the compile cache; LabelError if it does not compile."""
        files = None
        if _INCLUDES_TESTLIB.search(self.session.program):
            header = testlib_header(self.setup.testlib_header)
            if header is None:
                where = self.setup.testlib_header or " or ".join(DEFAULT_HEADERS)
                raise InfrastructureError(
                    f"the label's C++ checker includes testlib.h, which this host lacks ({where}); install "
                    "it there or set reward_rules.code.testlib_header"
                )
            files = {"testlib.h": header}
        build = self.setup.build
        wait = self.session.time_rule.wall(build.time_limit_s) + 5.0
        error = prepare_binary(self.session, build, time.monotonic() + wait, files)
        if error is not None:
            raise LabelError(f"the checker does not compile: {error}")

    def check(
        self, stdin: str, expected: str, output: bytes, time_limit_s: float, wall_limit_s: float | None = None
    ) -> Verdict:
        """The checker's verdict on the candidate's `output` (see the module's doc for the rules);
        `wall_limit_s` (default: the time rule's) caps the run's wall clock."""
        if time_limit_s <= 0 or (wall_limit_s is not None and wall_limit_s <= 0):
            return Verdict(False, TIMEOUT, "the checker: not run: the sample's time budget is spent")
        run = self._run(stdin, output, expected, time_limit_s, wall_limit_s)
        if isinstance(run, Verdict):
            return run
        if run.memory_killed:
            return Verdict(False, MEMORY, "the checker ran out of memory on this output")
        if run.timeout:
            return Verdict(False, TIMEOUT, f"the checker took over {time_limit_s:.3g} s on this output")
        if run.output_limit:
            return Verdict(False, WRONG, "the checker printed too much on this output")
        said = last_line(run.stderr) or last_line(run.stdout)
        if run.signal:
            return Verdict(False, WRONG, f"the checker crashed on this output (signal {run.signal})")
        if run.exit_code == ACCEPTED:
            return Verdict(True)
        if run.exit_code == WRONG_ANSWER:
            return Verdict(False, WRONG, f"the checker: {said or 'wrong answer'}")
        if run.exit_code == PRESENTATION_ERROR:
            return Verdict(False, WRONG, f"the checker: presentation error{': ' + said if said else ''}")
        if run.exit_code == FAIL:
            accepted = self._accepts_its_answer(stdin, expected)
            if accepted is None:
                unproven = "the checker failed on this output (and did not finish on the label's answer)"
                return Verdict(False, WRONG, f"{unproven}: {said}")
            if accepted:
                return Verdict(False, WRONG, f"the checker failed on this output: {said}")
            raise LabelError(f"the checker fails on the label's own answer: {said or 'exit status 3'}")
        return Verdict(False, WRONG, f"the checker: exit status {run.exit_code}{': ' + said if said else ''}")

    def _accepts_its_answer(self, stdin: str, expected: str) -> bool | None:
        """Whether the checker accepts the label's own answer; None when the run did not finish."""
        run = self._run(stdin, expected.encode("utf-8", "surrogateescape"), expected, self.time_limit_s)
        if isinstance(run, Verdict) or run.timeout:
            return None
        return not (run.signal or run.exit_code)

    def _run(
        self, stdin: str, output: bytes, expected: str, time_limit_s: float, wall_limit_s: float | None = None
    ) -> StdioRun | Verdict:
        files = {
            FILES[0]: stdin.encode("utf-8", "surrogateescape"),
            FILES[1]: output,
            FILES[2]: expected.encode("utf-8", "surrogateescape"),
        }
        try:
            return self.session.run_stdio("", time_limit_s, _REPORT_BYTES, files, FILES, wall_limit_s)
        except CandidateFailure as exc:  # the checker's sandbox stopped answering
            reason = exc.reason if exc.reason in (TIMEOUT, MEMORY) else WRONG
            return Verdict(False, reason, f"the checker: {exc}"[:300])

    def close(self) -> None:
        self.session.close()
