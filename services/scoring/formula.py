"""Formulas such as `0.9*math + 0.1*format - length_penalty`, evaluated safely.

The gateway's reward recipes and the judge's `multi` rubrics both use them. The text is
parsed once with `ast` and compiled into closures over a whitelist of nodes (numbers,
names, + - * /, unary minus, min/max/abs/clip/ratio), so a config file can never run code.
A dotted name (`group.min_len`) is one name: the gateway's group terms
(services/gateway/group_terms.py) are written that way.

A formula that can never give a finite number (`1e400 + rules`, `rules/0`, `a/(a-a)`) is
refused when it is loaded, so a service does not start and then fail every sample: constant
parts are folded and checked, and the whole is tried at a few points.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

Evaluator = Callable[[Mapping[str, float]], float]

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _ratio(numerator: float, denominator: float, default: float) -> float:
    """`numerator / denominator`, or `default` when the denominator is 0: a group's length span
    is 0 when every response has the same length, and that is a case, not an error."""
    return default if denominator == 0 else numerator / denominator


_FUNCTIONS: dict[str, tuple[Callable[..., float], int | None]] = {
    "min": (min, None),
    "max": (max, None),
    "abs": (abs, 1),
    "clip": (_clip, 3),
    "ratio": (_ratio, 3),
}


class FormulaError(ValueError):
    pass


MAX_LENGTH = 1000
# Values tried for every name at load time: a formula that fails at all of them is refused.
_PROBES = (1.0, 0.5, 0.0, -1.0, 2.0, 0.25, -0.5, 10.0)


class Formula:
    def __init__(self, text: str, names: set[str] | None = None) -> None:
        """`names`: the names the formula may use (None: any, checked when evaluated)."""
        if len(text) > MAX_LENGTH:
            raise FormulaError(f"formula longer than {MAX_LENGTH} characters")
        self.text = text
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise FormulaError(f"formula {text!r} is not an expression: {exc.msg}") from exc
        self.names: set[str] = set()
        self._allowed = names
        self._evaluate = self._compile(tree.body)
        self._check_evaluable()

    def _check_evaluable(self) -> None:
        """Refuse a formula that gives no finite number at any probe point (names set alike and apart)."""
        names = sorted(self.names)
        points = [dict.fromkeys(names, v) for v in _PROBES]
        points += [
            {n: _PROBES[(i + k) % len(_PROBES)] for i, n in enumerate(names)} for k in range(len(_PROBES))
        ]
        problems: set[str] = set()
        for point in points:
            try:
                self(point)
            except FormulaError as exc:
                problems.add(str(exc))
                continue
            return
        raise FormulaError(
            f"formula {self.text!r} never gives a finite number: {'; '.join(sorted(problems))}"
        )

    def __call__(self, values: Mapping[str, float]) -> float:
        try:
            result = self._evaluate(values)
        except ZeroDivisionError as exc:
            raise FormulaError(f"formula {self.text!r}: division by zero") from exc
        except KeyError as exc:
            raise FormulaError(f"formula {self.text!r}: no value for {exc.args[0]!r}") from exc
        if not math.isfinite(result):
            raise FormulaError(f"formula {self.text!r} gave {result}")
        return float(result)

    def _compile(self, node: ast.expr) -> Evaluator:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            constant = float(node.value)
            if not math.isfinite(constant):
                raise FormulaError(f"formula {self.text!r}: {ast.unparse(node)} is not a finite number")
            return lambda _: constant
        if isinstance(node, ast.Name | ast.Attribute):
            name = _dotted(node)
            if name is None:
                raise FormulaError(
                    f"formula {self.text!r}: {ast.unparse(node)!r} is not allowed "
                    "(a name, or names joined by dots)"
                )
            if self._allowed is not None and name not in self._allowed:
                raise FormulaError(
                    f"formula {self.text!r} uses {name!r}, which is not one of {sorted(self._allowed)}"
                )
            self.names.add(name)
            return lambda values: values[name]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            op = _BINARY[type(node.op)]
            left, right = self._compile(node.left), self._compile(node.right)
            return lambda values: op(left(values), right(values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = self._compile(node.operand)
            sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
            return lambda values: sign * inner(values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            entry = _FUNCTIONS.get(node.func.id)
            if entry is None:
                raise FormulaError(
                    f"formula {self.text!r} calls {node.func.id!r}; allowed: {sorted(_FUNCTIONS)}"
                )
            function, arity = entry
            if (arity is not None and len(node.args) != arity) or not node.args:
                raise FormulaError(
                    f"formula {self.text!r}: {node.func.id} takes {arity or 'one or more'} arguments"
                )
            args = [self._compile(arg) for arg in node.args]
            return lambda values: float(function(*(a(values) for a in args)))
        raise FormulaError(
            f"formula {self.text!r}: {ast.unparse(node)!r} is not allowed "
            "(numbers, names, + - * /, min/max/abs/clip/ratio)"
        )


def _dotted(node: ast.expr) -> str | None:
    """`group.min_len` -> "group.min_len"; None for anything but names joined by dots (a part that
    starts with `_` included: `x.__class__` is refused, whatever the names allowed)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):  # no dunders, ever
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None
