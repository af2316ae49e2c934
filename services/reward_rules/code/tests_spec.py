"""The code grader's label: `{"grader": "code", "tests": {...}}` plus optional limits and language.

Four test formats, as the open code-RL datasets ship them: stdin/stdout cases (APPS,
CodeContests, LiveCodeBench), assert lines (MBPP), a HumanEval `check(candidate)` function,
and call cases with JSON arguments and expected values (TACO's `fn_name`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StdioCase(_Spec):
    input: str = ""
    output: str


class StdioTests(_Spec):
    kind: Literal["stdio"]
    cases: list[StdioCase] = Field(min_length=1)


class AssertTests(_Spec):
    kind: Literal["assert"]
    entry_point: str = ""
    asserts: list[str] = Field(min_length=1)
    setup: str = Field(default="", description="trusted code run before the asserts (imports, helpers)")


class CheckTests(_Spec):
    kind: Literal["check"]
    entry_point: str
    test: str = Field(description="code defining check(candidate), HumanEval style")


class CallCase(_Spec):
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    expected: Any


class CallTests(_Spec):
    kind: Literal["call"]
    entry_point: str
    cases: list[CallCase] = Field(min_length=1)


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
