"""Runs one sample's tests: the candidate in its sandbox, the label's test code in another.

Call and stdio tests compare plain values and text here, against the label's data. Assert
lines and HumanEval `check` functions are code from the request, so they run in a label
sandbox (labelrun.py) whose calls reach the program through this process as plain values: an
object with an always-true `__eq__`, an int subclass, a patched `builtins.abs`, `exit(0)` or a
peek at the caller's frame has nothing to work on, and the label's code never runs here.
Helpers the tests call come from the label (`tests.helpers`) or, when it has none, from the
sample's prompt (the dataset's text: prompt_helpers.py), never from the program.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from services.reward_rules.code.checker import CheckerSetup, NativeChecker
from services.reward_rules.code.harness import CandidateError
from services.reward_rules.code.labelcode import TestNames, test_names, undefined_names
from services.reward_rules.code.labelrun import LabelRun, LabelRunPool
from services.reward_rules.code.native import COMPILE, NativeBuild, prepare_binary
from services.reward_rules.code.output_match import check_output, describe_value, values_match
from services.reward_rules.code.prompt_helpers import helpers_from_prompt
from services.reward_rules.code.session import (
    CRASH,
    MEMORY,
    OUTPUT,
    TIMEOUT,
    WALL_CLOCK,
    WRONG,
    CandidateFailure,
    InfrastructureError,
    MemoryTooSmall,
    Session,
    StdioRun,
    TimeRule,
    last_line,
)
from services.reward_rules.code.tests_spec import (
    AssertTests,
    CallTests,
    CheckTests,
    CodeLabel,
    StdioCase,
    StdioTests,
)

_BUDGET_SPENT = "not run: the sample's time budget is spent"
_GAVE_UP = "not run: earlier tests timed out"


@dataclass
class CaseOutcome:
    name: str
    passed: bool
    reason: str = ""
    message: str = ""

    def describe(self) -> str:
        return f"{self.name}: {self.reason}" + (f" ({self.message})" if self.message else "")


@dataclass
class Report:
    outcomes: list[CaseOutcome] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    def count(self, reason: str) -> int:
        return sum(o.reason == reason for o in self.outcomes)

    def first_failure(self) -> CaseOutcome | None:
        return next((o for o in self.outcomes if not o.passed), None)


@dataclass(frozen=True)
class Budget:
    time_limit_s: float
    max_output_bytes: int
    sample_deadline: float  # monotonic: past it, the remaining tests are not run
    tolerance: float = 0.0  # for labels that set none
    max_value_bytes: int = 4 << 20
    max_timeouts: int = 2  # after this many timed-out tests, a sample's other tests are not run
    time_rule: TimeRule = WALL_CLOCK  # how time_limit_s is measured (CPU time, or wall clock)

    def test_deadline(self) -> float:
        """The test's wall-clock deadline (its CPU time is limited by the session: begin_test)."""
        return min(time.monotonic() + self.time_rule.wall(self.time_limit_s), self.sample_deadline)

    def time_left(self) -> float:
        """A test's time limit, as far as the sample's budget leaves it."""
        return min(self.time_limit_s, self.sample_deadline - time.monotonic())

    def timeout_message(self, over: str = "") -> str:
        if not self.time_rule.cpu:
            return f"{self.time_limit_s:g} s"
        if over == "wall":
            return f"over the {self.time_rule.wall(self.time_limit_s):g} s wall-clock limit"
        return f"over {self.time_limit_s:g} s of CPU time"


def _failure_outcome(name: str, exc: BaseException) -> CaseOutcome:
    if isinstance(exc, CandidateFailure):
        return CaseOutcome(name, False, exc.reason, exc.message)
    if isinstance(exc, CandidateError):
        return CaseOutcome(name, False, CRASH, str(exc)[:300])
    return CaseOutcome(name, False, CRASH, f"{type(exc).__name__}: {exc}"[:300])


def _skipped(report: Report, name: str, budget: Budget) -> CaseOutcome | None:
    """A CaseOutcome when the test is not run: the sample's budget is spent or it keeps timing out."""
    if time.monotonic() >= budget.sample_deadline:
        return CaseOutcome(name, False, TIMEOUT, _BUDGET_SPENT)
    if report.count(TIMEOUT) >= budget.max_timeouts:
        return CaseOutcome(name, False, TIMEOUT, _GAVE_UP)
    return None


def _prepared(session: Session, report: Report, budget: Budget, name: str) -> CaseOutcome | None:
    """Loads the program (again after a failure); an CaseOutcome when that already fails the test.

    Loading counts against the test's time and the sample's budget. A sandbox that does not
    start raises InfrastructureError: the grader's failure, never the program's.
    """
    early = _skipped(report, name, budget)
    if early is not None:
        return early
    try:
        session.begin_test(budget.time_limit_s)  # loading is timed as a test of its own
        session.prepare(budget.test_deadline())
    except InfrastructureError:
        raise
    except CandidateFailure as exc:
        return _failure_outcome(name, exc)
    except Exception as exc:
        return CaseOutcome(name, False, CRASH, f"loading the program: {_short(exc)}")
    return None


def _short(exc: BaseException) -> str:
    if isinstance(exc, CandidateError):
        return str(exc)[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


def _judge_load(tests: AssertTests | CheckTests, names: TestNames) -> dict[str, Any]:
    setup = tests.setup if isinstance(tests, AssertTests) else ""
    test = tests.test if isinstance(tests, CheckTests) else ""
    return {
        "op": "judge",
        "helpers": tests.helpers,
        "setup": setup,
        "test": test,
        "candidates": list(names.candidates),
        "modules": list(names.modules),
    }


def _shared(tests: AssertTests | CheckTests) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    if isinstance(tests, CheckTests):
        return (("helpers", tests.helpers), ("test", tests.test)), ()
    return (("helpers", tests.helpers), ("setup", tests.setup)), tuple(tests.asserts)


def with_prompt_helpers(tests: AssertTests | CheckTests, prompt: str) -> AssertTests | CheckTests | None:
    """The label's tests with the helpers they call taken from the sample's prompt (the dataset's
    text), when the label names its functions under test and carries no helpers; else None."""
    explicit = tuple(name for name in (tests.entry_point, *tests.entry_points) if name)
    if tests.helpers or not explicit or not prompt:
        return None
    shared, lines = _shared(tests)
    needed = undefined_names(shared, lines, explicit)
    if not needed:
        return None
    helpers = helpers_from_prompt(prompt, needed, frozenset(explicit))
    return tests.model_copy(update={"helpers": helpers}) if helpers else None


def label_names(tests: AssertTests | CheckTests) -> TestNames:
    """The program functions and stdlib modules the label's test code uses (LabelCodeError if unclear)."""
    shared, lines = _shared(tests)
    return test_names(shared, lines, (tests.entry_point, *tests.entry_points))


def run_judged(
    session: Session, pool: LabelRunPool, tests: AssertTests | CheckTests, budget: Budget
) -> Report:
    """Assert lines or a check function, each run by the label sandbox against the loaded program."""
    names = label_names(tests)
    runs: list[tuple[str, dict[str, Any]]]
    if isinstance(tests, CheckTests):
        runs = [("check", {"op": "run", "check": tests.entry_point})]
    else:
        runs = [(f"assert {i}", {"op": "run", "code": line}) for i, line in enumerate(tests.asserts, start=1)]
    run = LabelRun(pool, session.memory_bytes, _judge_load(tests, names), budget.max_value_bytes)
    report = Report()
    try:
        for name, message in runs:
            early = _prepared(session, report, budget, name)
            if early is not None:
                report.outcomes.append(early)
                continue
            session.begin_test(budget.time_limit_s)
            verdict = run.run(message, session, budget.test_deadline())
            report.outcomes.append(CaseOutcome(name, verdict.passed, verdict.reason, verdict.message))
    finally:
        run.close()
    return report


def _value_bound(expected: Any, cap: int) -> int:
    """Bytes a reply may take to carry a value that could equal `expected` (tags, float digits)."""
    try:
        return min(cap, 16 * len(json.dumps(expected)) + (4 << 10))
    except ValueError:  # an int over Python's 4300-digit text limit
        return cap


def run_calls(session: Session, tests: CallTests, budget: Budget) -> Report:
    report = Report()
    tolerance = budget.tolerance if tests.tolerance is None else tests.tolerance
    for index, case in enumerate(tests.cases, start=1):
        name = f"case {index}"
        early = _prepared(session, report, budget, name)
        if early is not None:
            report.outcomes.append(early)
            continue
        session.begin_test(budget.time_limit_s)
        deadline = budget.test_deadline()
        bound = _value_bound(case.expected, budget.max_value_bytes)
        try:
            value = session.call(tests.entry_point, tuple(case.args), dict(case.kwargs), deadline, bound)
        except CandidateFailure as exc:
            report.outcomes.append(_failure_outcome(name, exc))
            continue
        except Exception as exc:
            report.outcomes.append(CaseOutcome(name, False, CRASH, _short(exc)))
            continue
        if values_match(value, case.expected, tolerance):
            report.outcomes.append(CaseOutcome(name, True))
        else:
            message = f"expected {describe_value(case.expected)}, got {describe_value(value)}"
            report.outcomes.append(CaseOutcome(name, False, WRONG, message))
    return report


def _output_bound(expected: str, cap: int) -> int:
    """Stdout a case may produce: what a right answer can take (trailing spaces, longer floats)."""
    return min(cap, 2 * len(expected.encode("utf-8", "surrogateescape")) + (1 << 20))


def checker_names(tests: StdioTests) -> TestNames:
    """Stdlib modules a custom checker uses; LabelCodeError if it needs a name it does not define."""
    names = test_names((("checker", tests.checker_code),), (), ("check",))
    return TestNames((), names.modules)


Checker = LabelRun | NativeChecker


def _checker(
    tests: StdioTests,
    label_runs: LabelRunPool | None,
    natives: CheckerSetup | None,
    session: Session,
    budget: Budget,
) -> Checker | None:
    if tests.checker == "testlib":
        if natives is None:
            raise InfrastructureError("a C++ checker needs the local sandbox backend (bubblewrap)")
        return NativeChecker(natives, tests.checker_code, session.memory_bytes, budget.time_limit_s)
    if tests.checker != "custom":
        return None
    if label_runs is None:
        raise InfrastructureError("a custom checker needs a local label sandbox (bubblewrap)")
    load = {
        "op": "judge",
        "helpers": tests.checker_code,
        "candidates": [],
        "modules": list(checker_names(tests).modules),
    }
    return LabelRun(label_runs, session.memory_bytes, load, budget.max_value_bytes)


def _checked(
    checker: Checker,
    session: Session,
    name: str,
    case: StdioCase,
    output: bytes,
    budget: Budget,
    checker_threshold: float = 1.0,
) -> CaseOutcome:
    """The dataset's checker on one output, in a sandbox of its own; its failures are wrong answers
    (a C++ checker's statuses: checker.py)."""
    if isinstance(checker, NativeChecker):  # its verdicts say "the checker" themselves
        wall = budget.test_deadline() - time.monotonic()
        verdict = checker.check(case.input, case.output, output, budget.time_left(), wall)
        return CaseOutcome(name, verdict.passed, verdict.reason, verdict.message)
    actual = output.decode("utf-8", "replace")
    message: dict[str, object] = {"op": "run", "input": case.input, "expected": case.output, "output": actual}
    message["threshold"] = checker_threshold  # what a number the checker returns must reach
    verdict = checker.run(message, session, budget.test_deadline())
    if verdict.passed:
        return CaseOutcome(name, True)
    if verdict.reason == CRASH:
        return CaseOutcome(name, False, WRONG, f"the checker: {verdict.message}")
    return CaseOutcome(
        name, False, verdict.reason, f"the checker: {verdict.message}" if verdict.message else ""
    )


def run_stdio(
    session: Session,
    tests: StdioTests,
    budget: Budget,
    build: NativeBuild | None = None,
    label_runs: LabelRunPool | None = None,
    natives: CheckerSetup | None = None,
) -> Report:
    report = Report()
    checker = _checker(tests, label_runs, natives, session, budget)
    try:
        _run_cases(session, tests, budget, build, checker, report)
    finally:
        if checker is not None:
            checker.close()
    return report


def _run_cases(
    session: Session,
    tests: StdioTests,
    budget: Budget,
    build: NativeBuild | None,
    checker: Checker | None,
    report: Report,
) -> None:
    tolerance = budget.tolerance if tests.tolerance is None else tests.tolerance
    compile_started = time.monotonic()
    if build is not None:
        # waiting for the same program's compile elsewhere included
        reason = COMPILE
        try:
            error = prepare_binary(
                session, build, compile_started + session.time_rule.wall(build.time_limit_s) + 5.0
            )
        except MemoryTooSmall as exc:  # the label's memory limit is below what a sandbox holds
            reason, error = MEMORY, exc.message
        if error is not None:  # every test fails with it: the totals stay the label's
            cases = range(1, len(tests.cases) + 1)
            report.outcomes = [CaseOutcome(f"case {index}", False, reason, error[:300]) for index in cases]
            return
    if isinstance(checker, NativeChecker):
        checker.prepare()  # LabelError if the label's checker does not compile
    # compiling is not the tests' time: the sample's budget starts after it
    budget = replace(budget, sample_deadline=budget.sample_deadline + time.monotonic() - compile_started)
    pending = list(range(len(tests.cases)))
    while pending:
        early = _skipped(report, "", budget)
        if early is not None:  # the budget is spent, or too many runs timed out: the rest are not run
            report.outcomes += [replace(early, name=f"case {index + 1}") for index in pending]
            return
        inputs = [
            (tests.cases[i].input, _output_bound(tests.cases[i].output, budget.max_output_bytes))
            for i in _batch(tests, pending)
        ]
        max_timeouts = budget.max_timeouts - report.count(TIMEOUT)
        done = 0
        try:
            runs = session.stdio_batch(
                inputs, budget.time_limit_s, budget.sample_deadline, max_timeouts, budget.max_output_bytes
            )
            for run in runs:
                case, (_, max_output) = tests.cases[pending[done]], inputs[done]
                name = f"case {pending[done] + 1}"
                done += 1
                report.outcomes.append(
                    _stdio_outcome(session, tests, budget, checker, tolerance, name, case, max_output, run)
                )
        except CandidateFailure as exc:  # no sandbox may start again: the program kept failing
            report.outcomes += [_failure_outcome(f"case {index + 1}", exc) for index in pending[done:]]
            return
        pending = pending[done:]


BATCH_INPUT_BYTES = 1 << 20  # the inputs of one request: the harness holds them while it runs them


def _batch(tests: StdioTests, pending: list[int]) -> list[int]:
    """The next tests to send in one request: as many as fit in BATCH_INPUT_BYTES (one at least),
    so that a label's large inputs do not sit in the sandbox's memory beside the runs."""
    size, count = 0, 0
    for index in pending:
        size += len(tests.cases[index].input)
        if count and size > BATCH_INPUT_BYTES:
            break
        count += 1
    return pending[:count]


def _stdio_outcome(
    session: Session,
    tests: StdioTests,
    budget: Budget,
    checker: Checker | None,
    tolerance: float,
    name: str,
    case: StdioCase,
    max_output: int,
    run: StdioRun | CandidateFailure | str,
) -> CaseOutcome:
    """One stdio run's verdict: the sandbox's failure, a test not run, or its output checked."""
    if isinstance(run, CandidateFailure):
        return _failure_outcome(name, run)
    if isinstance(run, str):
        return CaseOutcome(name, False, TIMEOUT, _BUDGET_SPENT if run == "budget" else _GAVE_UP)
    if run.memory_killed:
        return CaseOutcome(name, False, MEMORY, f"{session.memory_bytes >> 20} MB")
    if run.timeout:
        return CaseOutcome(name, False, TIMEOUT, budget.timeout_message(run.over))
    if run.output_limit:
        return CaseOutcome(name, False, OUTPUT, f"over {max_output} bytes")
    if run.signal or run.exit_code:
        how = f"killed by signal {run.signal}" if run.signal else f"exit status {run.exit_code}"
        detail = last_line(run.stderr)
        return CaseOutcome(name, False, CRASH, f"{how}: {detail}" if detail else how)
    if checker is not None:
        return _checked(checker, session, name, case, run.stdout, budget, tests.checker_threshold)
    mismatch = check_output(case.output, run.stdout.decode("utf-8", "replace"), tests.checker, tolerance)
    return CaseOutcome(name, mismatch is None, WRONG if mismatch else "", mismatch or "")


def run_tests(
    session: Session,
    label: CodeLabel,
    budget: Budget,
    label_runs: LabelRunPool | None,
    build: NativeBuild | None = None,
    natives: CheckerSetup | None = None,
) -> Report:
    tests = label.tests
    if isinstance(tests, StdioTests):
        return run_stdio(session, tests, budget, build, label_runs, natives)
    if isinstance(tests, CallTests):
        return run_calls(session, tests, budget)
    if label_runs is None:
        raise InfrastructureError("assert and check tests need a local label sandbox (bubblewrap)")
    return run_judged(session, label_runs, tests, budget)
