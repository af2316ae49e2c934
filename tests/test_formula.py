"""Reward formulas: arithmetic over component names, and nothing else."""

from __future__ import annotations

import pytest

from services.scoring.formula import Formula, FormulaError


def test_arithmetic_and_functions() -> None:
    formula = Formula("0.9*math + 0.1*format - length_penalty", {"math", "format", "length_penalty"})
    assert formula({"math": 1.0, "format": 0.0, "length_penalty": 0.25}) == pytest.approx(0.65)
    assert Formula("clip(rm, -1, 1) + max(a, b) - abs(-c) / 2", {"rm", "a", "b", "c"})(
        {"rm": 5.0, "a": 0.1, "b": 0.2, "c": 1.0}
    ) == pytest.approx(1.0 + 0.2 - 0.5)
    assert Formula("-x", {"x"})({"x": 2.0}) == -2.0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("__import__('os').system('true')", "__import__"),
        ("math.__class__", "not allowed"),
        ("[m for m in ()]", "not allowed"),
        ("unknown + 1", "unknown"),
        ("open('x')", "open"),
        ("clip(1, 2)", "clip takes 3"),
        ("1 +", "not an expression"),
        ("m ** 1000", "not allowed"),
        ("True + m", "not allowed"),
        ("lambda: 1", "not allowed"),
    ],
)
def test_anything_else_is_refused_when_loaded(text: str, needle: str) -> None:
    with pytest.raises(FormulaError) as caught:
        Formula(text, {"m"})
    assert needle in str(caught.value)


def test_names_can_be_left_open() -> None:
    formula = Formula("a + b")
    assert formula.names == {"a", "b"} and formula({"a": 1.0, "b": 2.0}) == 3.0
    with pytest.raises(FormulaError, match="no value for 'b'"):
        formula({"a": 1.0})
    with pytest.raises(FormulaError, match="longer than"):
        Formula("a+" * 600 + "a")


def test_runtime_problems_are_errors_not_values() -> None:
    with pytest.raises(FormulaError, match="division by zero"):
        Formula("a / b", {"a", "b"})({"a": 1.0, "b": 0.0})
    with pytest.raises(FormulaError, match="gave"):
        Formula("a * b", {"a", "b"})({"a": 1e308, "b": 1e308})


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1e400 + rules", "not a finite number"),
        ("rules/0", "never gives a finite number"),
        ("rules/(rules-rules)", "division by zero"),
        ("1e308*10 - rules", "never gives a finite number"),
        ("max(rules, 1e999)", "not a finite number"),
    ],
)
def test_formulas_that_can_never_evaluate_are_refused_when_loaded(text: str, needle: str) -> None:
    with pytest.raises(FormulaError, match=needle):
        Formula(text, {"rules"})


def test_formulas_that_fail_only_at_some_values_are_allowed() -> None:
    assert Formula("1 / rules", {"rules"})({"rules": 4.0}) == 0.25  # rules == 0 fails at run time only
