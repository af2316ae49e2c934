"""The sympy fallback: only for expressions the numeric test could not evaluate.

It runs inside a worker process whose deadline is enforced from outside (pool.py), so
a `simplify` that never returns costs one killed worker, not a hung trainer. Powers are
built unevaluated when their value would be astronomically large.
"""

from __future__ import annotations

from typing import Any

import sympy  # type: ignore[import-untyped]

from services.reward_rules.math.nodes import Call, Const, Node, Num, Op, Pct, Sym

__all__ = ["sympy_equal", "to_sympy"]

_FUNCS: dict[str, Any] = {
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "sec": sympy.sec,
    "csc": sympy.csc,
    "cot": sympy.cot,
    "arcsin": sympy.asin,
    "arccos": sympy.acos,
    "arctan": sympy.atan,
    "sinh": sympy.sinh,
    "cosh": sympy.cosh,
    "tanh": sympy.tanh,
    "ln": sympy.log,
    "exp": sympy.exp,
    "abs": sympy.Abs,
    "floor": sympy.floor,
    "ceil": sympy.ceiling,
    "sqrt": sympy.sqrt,
}


class _Unsupported(ValueError):
    pass


def to_sympy(node: Node) -> Any:
    """A sympy expression for a scalar node; raises ValueError for anything else."""
    if isinstance(node, Num):
        return sympy.Rational(node.value.numerator, node.value.denominator)
    if isinstance(node, Sym):
        return sympy.Symbol(node.name)
    if isinstance(node, Const):
        return {"pi": sympy.pi, "e": sympy.E, "i": sympy.I, "oo": sympy.oo}[node.name]
    if isinstance(node, Pct):
        return to_sympy(node.arg) / 100
    if isinstance(node, Op):
        args = [to_sympy(a) for a in node.args]
        if node.op == "add":
            return sympy.Add(*args)
        if node.op == "mul":
            return sympy.Mul(*args)
        if node.op == "neg":
            return -args[0]
        if node.op == "div":
            return args[0] / args[1]
        if node.op == "pow":
            base, exponent = args
            if exponent.is_Number and abs(exponent) > 10_000 and base.is_Number:
                return sympy.Pow(base, exponent, evaluate=False)
            if not exponent.is_Number and exponent.has(sympy.Pow):
                return sympy.Pow(base, exponent, evaluate=False)
            return sympy.Pow(base, exponent)
        if node.op == "mod":
            return sympy.Mod(args[0], args[1])
        if node.op == "fact":
            if args[0].is_Number and args[0] > 10_000:
                return sympy.factorial(args[0], evaluate=False)
            return sympy.factorial(args[0])
    if isinstance(node, Call):
        args = [to_sympy(a) for a in node.args]
        if node.fn in _FUNCS and len(args) == 1:
            return _FUNCS[node.fn](args[0])
        if node.fn == "root":
            return sympy.root(args[1], args[0])
        if node.fn == "log":
            return sympy.log(args[-1], args[0]) if len(args) == 2 else sympy.log(args[0])
        if node.fn == "binom":
            return sympy.binomial(args[0], args[1])
        return sympy.Function(node.fn)(*args)
    raise _Unsupported(f"{type(node).__name__} is not a scalar")


def sympy_equal(gold: Node, pred: Node) -> bool | None:
    """True/False when sympy can decide that gold - pred is zero, None when it cannot."""
    try:
        a, b = to_sympy(gold), to_sympy(pred)
        if a == b:
            return True
        difference = sympy.simplify(a - b)
    except (ValueError, TypeError, AttributeError, ZeroDivisionError, RecursionError):
        return None
    if difference == 0:
        return True
    return False if difference.is_number and difference.is_zero is False else None
