"""The code grader's label: `{"grader": "code", "tests": {...}}` plus optional limits and language.

Four test formats, as the open code-RL datasets ship them: stdin/stdout cases (APPS,
CodeContests, LiveCodeBench), assert lines (MBPP), a HumanEval `check(candidate)` function,
and call cases with JSON arguments and expected values (TACO's `fn_name`). Label code (asserts,
setup, check, helpers) comes with the request: it runs in a sandbox of its own, never here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StdioCase(_Spec):
    input: str = ""
    output: str


_HELPERS = (
    "the dataset's prompt code: helpers the tests call (HumanEval's poly, encode_cyclic). Run with the "
    "test code in its label sandbox, and before the program in the program's own, so a completion may "
    "call them; the tests always use these, never the program's redefinitions"
)
_ENTRY_POINTS = "more functions of the program that the tests call (the entry point is one already)"
_TOLERANCE = (
    "numbers match within this absolute or relative error; unset means exact (the grader's "
    "float_tolerance, 0 by default)"
)


class StdioTests(_Spec):
    kind: Literal["stdio"]
    cases: list[StdioCase] = Field(min_length=1)
    tolerance: float | None = Field(
        default=None,
        ge=0,
        description="non-integer number tokens match within this absolute or relative error; unset: "
        "tokens compare exactly as text (the grader's float_tolerance, 0 by default)",
    )
    checker: Literal["tokens", "float", "lines_unordered", "yes_no", "custom", "testlib"] = Field(
        default="tokens",
        description="tokens: exact tokens per line (tolerance applies); float: tokens with tolerance "
        "(1e-6 when unset); lines_unordered: the same lines in any order; yes_no: tokens compared "
        "case-insensitively (YES/yes/Yes); custom: `checker_code` in Python; testlib: "
        "`checker_code` in C++, a checker program",
    )
    checker_code: str = Field(
        default="",
        description="custom: Python defining check(input, expected, output) -> bool, the dataset's "
        "checker (any valid answer accepted), run in a label sandbox; testlib: C++ source of a "
        "checker program called as testlib's are (`checker input output answer`, files; exit 0 "
        "accepted, 1 wrong answer, 2 presentation error, 3 the checker failed), compiled and run "
        "in a sandbox of its own (testlib.h where the host has it). Never beside the candidate",
    )

    checker_threshold: float = Field(
        default=1.0,
        allow_inf_nan=False,
        description="custom: a number the checker returns passes when it is at least this (True "
        "always passes; False, None, NaN and anything else fail)",
    )

    @model_validator(mode="after")
    def _checker_needs_code(self) -> StdioTests:
        if (self.checker in ("custom", "testlib")) != bool(self.checker_code):
            raise ValueError(
                "checkers 'custom' and 'testlib' go with checker_code, and checker_code with them"
            )
        return self


class AssertTests(_Spec):
    kind: Literal["assert"]
    entry_point: str = ""
    entry_points: list[str] = Field(default_factory=list, description=_ENTRY_POINTS)
    asserts: list[str] = Field(min_length=1)
    setup: str = Field(default="", description="label code run before the asserts (imports, helpers)")
    helpers: str = Field(default="", description=_HELPERS)


class CheckTests(_Spec):
    kind: Literal["check"]
    entry_point: str
    entry_points: list[str] = Field(default_factory=list, description=_ENTRY_POINTS)
    test: str = Field(description="code defining check(candidate), HumanEval style")
    helpers: str = Field(default="", description=_HELPERS)


class CallCase(_Spec):
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    expected: Any


class CallTests(_Spec):
    kind: Literal["call"]
    entry_point: str
    cases: list[CallCase] = Field(min_length=1)
    tolerance: float | None = Field(default=None, ge=0, description=_TOLERANCE)


Tests = Annotated[StdioTests | AssertTests | CheckTests | CallTests, Field(discriminator="kind")]


class CodeLabel(_Spec):
    model_config = ConfigDict(extra="ignore", frozen=True)  # other label keys belong to other layers

    grader: str = "code"
    tests: Tests
    language: str = "python"
    time_limit_s: float | None = Field(default=None, gt=0)
    memory_limit_mb: int | None = Field(default=None, gt=0)

    def test_count(self) -> int:
        tests = self.tests
        if isinstance(tests, StdioTests | CallTests):
            return len(tests.cases)
        if isinstance(tests, AssertTests):
            return len(tests.asserts)
        return 1
