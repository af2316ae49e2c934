"""Runs one sample's tests: the candidate in its sandbox, the test logic here, in trusted code.

Assert lines and HumanEval `check` functions execute in this process against proxies: a name
the test takes from the program (the entry point, or a helper like HumanEval's `poly`)
becomes a function that calls into the sandbox and returns plain builtin values. So an
object with an always-true `__eq__`, an int subclass, a patched `builtins.abs`, `exit(0)`
or a peek at the caller's frame has nothing to work on: the comparison, the builtins and
the frames are all on this side. Label code is the dataset's, trusted like the label itself.
"""

from __future__ import annotations

import builtins
import functools
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.reward_rules.code.compare import describe_value, stdio_mismatch, values_match
from services.reward_rules.code.session import (
    CRASH,
    MEMORY,
    OUTPUT,
    TIMEOUT,
    WRONG,
    CandidateError,
    CandidateFailure,
    Session,
    last_line,
)
from services.reward_rules.code.tests_spec import AssertTests, CallTests, CheckTests, CodeLabel, StdioTests

_TEST_FILE = "<test>"
_BUDGET_SPENT = "not run: the sample's time budget is spent"


@dataclass
class Outcome:
    name: str
    passed: bool
    reason: str = ""
    message: str = ""

    def describe(self) -> str:
        return f"{self.name}: {self.reason}" + (f" ({self.message})" if self.message else "")


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    def count(self, reason: str) -> int:
        return sum(o.reason == reason for o in self.outcomes)

    def first_failure(self) -> Outcome | None:
        return next((o for o in self.outcomes if not o.passed), None)


@dataclass(frozen=True)
class Budget:
    time_limit_s: float
    max_output_bytes: int
    sample_deadline: float  # monotonic: past it, the remaining tests are not run
    tolerance: float = 1e-6


def _failure_outcome(name: str, exc: BaseException, test_source: str = "") -> Outcome:
    if isinstance(exc, CandidateFailure):
        return Outcome(name, False, exc.reason, exc.message)
    if isinstance(exc, AssertionError):
        where = _test_line(exc, test_source)
        return Outcome(name, False, WRONG, where or str(exc)[:200])
    if isinstance(exc, CandidateError):
        return Outcome(name, False, CRASH, str(exc)[:300])
    return Outcome(name, False, CRASH, f"{type(exc).__name__}: {exc}"[:300])


def _test_line(exc: BaseException, source: str) -> str:
    """The label's failing line (`assert candidate(3) == 5`), from the test code's traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == _TEST_FILE]
    if not frames or not source:
        return ""
    lines = source.splitlines()
    number = frames[-1].lineno or 0
    return lines[number - 1].strip()[:200] if 0 < number <= len(lines) else ""


# ------------------------------------------------------------------ trusted test code


@functools.lru_cache(maxsize=512)
def _compile(source: str, mode: str = "exec") -> types.CodeType:
    return compile(source, _TEST_FILE, mode)


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _test_globals(names: set[str], entry_point: str, proxy: Callable[[str], Any]) -> dict[str, Any]:
    """Globals for label code: builtins stay the real ones; other free names come from the program."""
    namespace: dict[str, Any] = {"__name__": "__test__", "__builtins__": builtins}
    wanted = names | ({entry_point} if entry_point else set())
    for name in wanted:
        if name in builtins.__dict__ or name.startswith("__"):
            continue  # a program's own `abs` never shadows the test's
        if name in sys.stdlib_module_names:
            try:
                namespace[name] = __import__(name)
                continue
            except ImportError:
                pass
        namespace[name] = proxy(name)
    return namespace


class _Proxy:
    """Stands for a function of the program; calls it in the sandbox by the session's deadline."""

    __slots__ = ("deadline", "name", "session")

    def __init__(self, session: Session, name: str, deadline: float) -> None:
        self.session = session
        self.name = name
        self.deadline = deadline

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.session.call(self.name, args, kwargs, self.deadline)

    def __repr__(self) -> str:
        return f"<candidate {self.name}>"


def _proxies(session: Session, deadline: float) -> Callable[[str], _Proxy]:
    return lambda name: _Proxy(session, name, deadline)


def _prepared(session: Session, budget: Budget, name: str) -> Outcome | None:
    """Loads the program (again after a failure); an Outcome when that already fails the test."""
    if time.monotonic() >= budget.sample_deadline:
        return Outcome(name, False, TIMEOUT, _BUDGET_SPENT)
    try:
        session.prepare(budget.time_limit_s)
    except CandidateFailure as exc:
        return _failure_outcome(name, exc)
    except Exception as exc:
        return Outcome(name, False, CRASH, f"loading the program: {_short(exc)}")
    return None


def _short(exc: BaseException) -> str:
    if isinstance(exc, CandidateError):
        return str(exc)[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


def run_check(session: Session, tests: CheckTests, budget: Budget) -> Report:
    name = "check"
    early = _prepared(session, budget, name)
    if early is not None:
        return Report([early])
    deadline = min(time.monotonic() + budget.time_limit_s, budget.sample_deadline)
    code = _compile(tests.test)
    namespace = _test_globals(_names(code), tests.entry_point, _proxies(session, deadline))
    try:
        exec(code, namespace)
        check = namespace.get("check")
        if not callable(check):
            return Report([Outcome(name, False, CRASH, "the label's test defines no check(candidate)")])
        check(_Proxy(session, tests.entry_point, deadline))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return Report([_failure_outcome(name, exc, tests.test)])
    return Report([Outcome(name, True)])


def run_asserts(session: Session, tests: AssertTests, budget: Budget) -> Report:
    report = Report()
    setup = _compile(tests.setup) if tests.setup else None
    for index, line in enumerate(tests.asserts, start=1):
        name = f"assert {index}"
        early = _prepared(session, budget, name)
        if early is not None:
            report.outcomes.append(early)
            continue
        deadline = min(time.monotonic() + budget.time_limit_s, budget.sample_deadline)
        try:
            code = _compile(line)
        except SyntaxError as exc:
            report.outcomes.append(Outcome(name, False, CRASH, f"the label's assert does not compile: {exc}"))
            continue
        names = _names(code) | (_names(setup) if setup is not None else set())
        namespace = _test_globals(names, tests.entry_point, _proxies(session, deadline))
        try:
            if setup is not None:
                exec(setup, namespace)
            exec(code, namespace)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            report.outcomes.append(_failure_outcome(name, exc, line))
            continue
        report.outcomes.append(Outcome(name, True))
    return report


def run_calls(session: Session, tests: CallTests, budget: Budget) -> Report:
    report = Report()
    for index, case in enumerate(tests.cases, start=1):
        name = f"case {index}"
        early = _prepared(session, budget, name)
        if early is not None:
            report.outcomes.append(early)
            continue
        deadline = min(time.monotonic() + budget.time_limit_s, budget.sample_deadline)
        try:
            value = session.call(tests.entry_point, tuple(case.args), dict(case.kwargs), deadline)
        except CandidateFailure as exc:
            report.outcomes.append(_failure_outcome(name, exc))
            continue
        except Exception as exc:
            report.outcomes.append(Outcome(name, False, CRASH, _short(exc)))
            continue
        if values_match(value, case.expected, budget.tolerance):
            report.outcomes.append(Outcome(name, True))
        else:
            message = f"expected {describe_value(case.expected)}, got {describe_value(value)}"
            report.outcomes.append(Outcome(name, False, WRONG, message))
    return report


def run_stdio(session: Session, tests: StdioTests, budget: Budget) -> Report:
    report = Report()
    for index, case in enumerate(tests.cases, start=1):
        name = f"case {index}"
        left = budget.sample_deadline - time.monotonic()
        if left <= 0:
            report.outcomes.append(Outcome(name, False, TIMEOUT, _BUDGET_SPENT))
            continue
        try:
            run = session.run_stdio(case.input, min(budget.time_limit_s, left), budget.max_output_bytes)
        except CandidateFailure as exc:
            report.outcomes.append(_failure_outcome(name, exc))
            continue
        if run.memory_killed:
            report.outcomes.append(Outcome(name, False, MEMORY, f"{session.memory_bytes >> 20} MB"))
        elif run.timeout:
            report.outcomes.append(Outcome(name, False, TIMEOUT, f"{budget.time_limit_s:g} s"))
        elif run.output_limit:
            report.outcomes.append(Outcome(name, False, OUTPUT, f"over {budget.max_output_bytes} bytes"))
        elif run.signal or run.exit_code:
            how = f"killed by signal {run.signal}" if run.signal else f"exit status {run.exit_code}"
            detail = last_line(run.stderr)
            report.outcomes.append(Outcome(name, False, CRASH, f"{how}: {detail}" if detail else how))
        else:
            actual = run.stdout.decode("utf-8", "replace")
            mismatch = stdio_mismatch(case.output, actual, budget.tolerance)
            report.outcomes.append(Outcome(name, mismatch is None, WRONG if mismatch else "", mismatch or ""))
    return report


def run_tests(session: Session, label: CodeLabel, budget: Budget) -> Report:
    tests = label.tests
    if isinstance(tests, StdioTests):
        return run_stdio(session, tests, budget)
    if isinstance(tests, CallTests):
        return run_calls(session, tests, budget)
    if isinstance(tests, AssertTests):
        return run_asserts(session, tests, budget)
    return run_check(session, tests, budget)
