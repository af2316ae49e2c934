"""Exact (Fraction) and high-precision (mpmath) evaluation of parsed answers.

Most answers are rational: exact Fraction arithmetic decides them with no tolerance at
all, so `1/2^99` vs `1/2^98` or `1/2004!` vs `1/2006!` can never collide. Irrational
constants go through mpmath at 50 digits. Both refuse work whose size would explode
(`10^10^10^10`, `(10^9)!` exactly): they raise instead, and the caller falls back to a
structural comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import mpmath  # type: ignore[import-untyped]

from services.reward_rules.math.nodes import Call, Const, Node, Num, Op, Pct, Sym

__all__ = [
    "DPS",
    "EvalError",
    "approx",
    "decimals_of",
    "exact",
    "fold",
    "free_symbols",
    "has_inexact",
    "infinity_sign",
]

DPS = 60
_MAX_EXACT_BITS = 400_000
_MAX_EXACT_FACTORIAL = 6000
_MAX_LOG2_MAGNITUDE = 1e15

MpNumber = Any  # mpmath.mpf | mpmath.mpc; mpmath ships no type hints


class EvalError(ArithmeticError):
    """The node has no (finite, affordable) value."""


def exact(node: Node) -> Fraction | None:
    """The exact rational value, or None when the node is not plain rational arithmetic."""
    try:
        return _exact(node)
    except (EvalError, ZeroDivisionError, OverflowError, ValueError):
        return None


def _exact(node: Node) -> Fraction:
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Op):
        if node.op == "add":
            return sum((_exact(a) for a in node.args), Fraction(0))
        if node.op == "mul":
            product = Fraction(1)
            for arg in node.args:
                product *= _exact(arg)
            return product
        if node.op == "neg":
            return -_exact(node.args[0])
        if node.op == "div":
            return _exact(node.args[0]) / _exact(node.args[1])
        if node.op == "pow":
            return _exact_pow(_exact(node.args[0]), _exact(node.args[1]))
        if node.op == "mod":
            left, right = _exact(node.args[0]), _exact(node.args[1])
            if left.denominator != 1 or right.denominator != 1 or right == 0:
                raise EvalError("mod of non-integers")
            return left % right
        if node.op == "fact":
            value = _exact(node.args[0])
            if value.denominator != 1 or not 0 <= value <= _MAX_EXACT_FACTORIAL:
                raise EvalError("factorial not exact")
            return Fraction(math.factorial(int(value)))
    if isinstance(node, Call):
        if node.fn == "sqrt":
            return _exact_root(_exact(node.args[0]), 2)
        if node.fn == "root":
            index = _exact(node.args[0])
            if index.denominator != 1 or not 2 <= index <= 64:
                raise EvalError("root index")
            return _exact_root(_exact(node.args[1]), int(index))
        if node.fn == "abs":
            return abs(_exact(node.args[0]))
        if node.fn == "floor":
            return Fraction(math.floor(_exact(node.args[0])))
        if node.fn == "ceil":
            return Fraction(math.ceil(_exact(node.args[0])))
        if node.fn in ("max", "min") and node.args:
            values = [_exact(a) for a in node.args]
            return max(values) if node.fn == "max" else min(values)
        if node.fn in ("gcd", "lcm") and node.args:
            numbers = [_exact(a) for a in node.args]
            if any(v.denominator != 1 or abs(v) > 10**1000 for v in numbers):
                raise EvalError("gcd/lcm of non-integers")
            integers = [int(v) for v in numbers]
            return Fraction(math.gcd(*integers) if node.fn == "gcd" else math.lcm(*integers))
        if node.fn == "binom":
            n, k = (_exact(a) for a in node.args)
            if n.denominator != 1 or k.denominator != 1 or not 0 <= n <= _MAX_EXACT_FACTORIAL:
                raise EvalError("binomial not exact")
            return Fraction(math.comb(int(n), int(k)) if k >= 0 else 0)
    raise EvalError("not rational arithmetic")


def _exact_pow(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        root = _exact_root(base, exponent.denominator) if base >= 0 else None
        if root is None:
            raise EvalError("irrational power")
        base, exponent = root, Fraction(exponent.numerator)
    power = int(exponent)
    if base in (0, 1) or power == 0:
        if base == 0 and power < 0:
            raise EvalError("division by zero")
        return base**power
    if base == -1:
        return Fraction(1 if power % 2 == 0 else -1)
    bits = max(base.numerator.bit_length(), base.denominator.bit_length())
    if abs(power) * bits > _MAX_EXACT_BITS:
        raise EvalError("power too large to evaluate exactly")
    return base**power


def _exact_root(value: Fraction, index: int) -> Fraction:
    if value < 0:
        if index % 2 == 0:
            raise EvalError("even root of a negative number")
        return -_exact_root(-value, index)
    parts = []
    for part in (value.numerator, value.denominator):
        if part.bit_length() > 4000:
            raise EvalError("root too large")
        root = round(part ** (1.0 / index)) if part.bit_length() < 1000 else _iroot(part, index)
        for candidate in (root - 1, root, root + 1):
            if candidate >= 0 and candidate**index == part:
                parts.append(candidate)
                break
        else:
            raise EvalError("irrational root")
    return Fraction(parts[0], parts[1])


def _iroot(value: int, index: int) -> int:
    low, high = 0, 1 << (value.bit_length() // index + 1)
    while low < high:
        mid = (low + high + 1) // 2
        if mid**index <= value:
            low = mid
        else:
            high = mid - 1
    return low


def approx(node: Node, env: Mapping[str, MpNumber] | None = None, dps: int = DPS) -> MpNumber:
    """The value at `dps` digits, symbols taken from `env`; raises EvalError."""
    with mpmath.workdps(dps):
        try:
            value = _approx(node, env or {})
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as error:
            raise EvalError(str(error)) from error
        if not mpmath.isfinite(value):
            raise EvalError("not finite")
        return value


def _approx(node: Node, env: Mapping[str, MpNumber]) -> MpNumber:
    if isinstance(node, Num):
        return mpmath.mpf(node.value.numerator) / node.value.denominator
    if isinstance(node, Sym):
        if node.name not in env:
            raise EvalError(f"free symbol {node.name}")
        return env[node.name]
    if isinstance(node, Const):
        if node.name == "pi":
            return +mpmath.pi
        if node.name == "e":
            return +mpmath.e
        if node.name == "i":
            return mpmath.mpc(0, 1)
        raise EvalError("infinity")
    if isinstance(node, Pct):
        return _approx(node.arg, env) / 100
    if isinstance(node, Op):
        args = node.args
        if node.op == "add":
            return mpmath.fsum(_approx(a, env) for a in args)
        if node.op == "mul":
            product = mpmath.mpf(1)
            for arg in args:
                product *= _approx(arg, env)
            return product
        if node.op == "neg":
            return -_approx(args[0], env)
        if node.op == "div":
            denominator = _approx(args[1], env)
            if denominator == 0:
                raise EvalError("division by zero")
            return _approx(args[0], env) / denominator
        if node.op == "pow":
            return _power(_approx(args[0], env), _approx(args[1], env))
        if node.op == "mod":
            left, right = _approx(args[0], env), _approx(args[1], env)
            if isinstance(left, mpmath.mpc) or isinstance(right, mpmath.mpc) or right == 0:
                raise EvalError("mod of non-reals")
            return mpmath.fmod(left, right) % right
        if node.op == "fact":
            value = _approx(args[0], env)
            if isinstance(value, mpmath.mpc) or value < 0 or abs(value) > 1e15:
                raise EvalError("factorial too large or not real")
            return mpmath.factorial(value)
    if isinstance(node, Call):
        return _call(node, env)
    raise EvalError(f"{type(node).__name__} has no numeric value")


def _power(base: MpNumber, exponent: MpNumber) -> MpNumber:
    if base == 0:
        if exponent == 0:
            raise EvalError("0^0")
        return mpmath.mpf(0)
    magnitude = abs(exponent) * abs(mpmath.log(abs(base), 2)) if abs(base) != 1 else 0
    if magnitude > _MAX_LOG2_MAGNITUDE:
        raise EvalError("power too large")
    real = not isinstance(base, mpmath.mpc) and not isinstance(exponent, mpmath.mpc)
    if real and base < 0 and exponent == int(exponent):
        return mpmath.power(base, int(exponent))
    return mpmath.power(base, exponent)


_UNARY = {
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tan": mpmath.tan,
    "sec": mpmath.sec,
    "csc": mpmath.csc,
    "cot": mpmath.cot,
    "arcsin": mpmath.asin,
    "arccos": mpmath.acos,
    "arctan": mpmath.atan,
    "arcsec": mpmath.asec,
    "arccsc": mpmath.acsc,
    "arccot": mpmath.acot,
    "sinh": mpmath.sinh,
    "cosh": mpmath.cosh,
    "tanh": mpmath.tanh,
    "coth": mpmath.coth,
    "sech": mpmath.sech,
    "csch": mpmath.csch,
    "ln": mpmath.ln,
    "abs": abs,
    "floor": mpmath.floor,
    "ceil": mpmath.ceil,
}


def _call(node: Call, env: Mapping[str, MpNumber]) -> MpNumber:
    args = [_approx(a, env) for a in node.args]
    fn = node.fn
    if fn in _UNARY and len(args) == 1:
        if fn in ("ln",) and args[0] == 0:
            raise EvalError("log of zero")
        return _UNARY[fn](args[0])
    if fn == "sqrt":
        return mpmath.sqrt(args[0])
    if fn == "root":
        index, radicand = args
        if not isinstance(radicand, mpmath.mpc) and radicand < 0 and index == int(index) and int(index) % 2:
            return -mpmath.root(-radicand, int(index))
        return mpmath.root(radicand, index) if index == int(index) else mpmath.power(radicand, 1 / index)
    if fn == "log":
        if len(args) == 1:
            if args[0] == 0:
                raise EvalError("log of zero")
            # A bare \log is natural in most solutions (and base 10 in a few; both agree on 1).
            return mpmath.ln(args[0])
        base, value = args
        if value == 0 or base in (0, 1):
            raise EvalError("bad logarithm")
        return mpmath.ln(value) / mpmath.ln(base)
    if fn == "exp":
        if not isinstance(args[0], mpmath.mpc) and abs(args[0]) > 1e14:
            raise EvalError("exp too large")
        return mpmath.exp(args[0])
    if fn == "binom":
        n, k = args
        if abs(n) > 1e15 or abs(k) > 1e15:
            raise EvalError("binomial too large")
        return mpmath.binomial(n, k)
    raise EvalError(f"function {fn} has no numeric value")


def fold(node: Node) -> Node:
    """Replace every exactly computable subtree by its value, and sort sums and products.

    Two huge values (`10^{10^{10}}`, `10^{10000000000}`) that no evaluator can afford are
    then compared by this canonical structure: equal structure, equal value.
    """
    if isinstance(node, Op | Call):
        value = exact(node)
        if value is not None:
            return Num(value)
        args = tuple(fold(a) for a in node.args)
        if isinstance(node, Op) and node.op in ("add", "mul"):
            args = tuple(sorted(args, key=repr))
        return Op(node.op, args) if isinstance(node, Op) else Call(node.fn, args)
    if isinstance(node, Pct):
        return Pct(fold(node.arg))
    if isinstance(node, Num) and node.decimals is not None:
        return Num(node.value)
    return node


def free_symbols(node: Node) -> frozenset[str]:
    """Names of the free symbols (letters other than the constants e, i, pi)."""
    if isinstance(node, Sym):
        return frozenset((node.name,))
    children = _children(node)
    if not children:
        return frozenset()
    return frozenset().union(*(free_symbols(c) for c in children))


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Op | Call):
        return node.args
    if isinstance(node, Pct):
        return (node.arg,)
    return ()


def has_inexact(node: Node) -> bool:
    """Whether a written decimal (`0.333`) is part of the node: it allows a tolerance."""
    if isinstance(node, Num):
        return node.decimals is not None
    return any(has_inexact(c) for c in _children(node))


def decimals_of(node: Node) -> int | None:
    """Written decimals of a bare decimal literal (`-0.25` -> 2), else None."""
    if isinstance(node, Op) and node.op == "neg":
        return decimals_of(node.args[0])
    if isinstance(node, Num):
        return node.decimals
    return None


def infinity_sign(node: Node) -> int:
    """+1 for oo, -1 for -oo, 0 for anything else."""
    if isinstance(node, Const) and node.name == "oo":
        return 1
    if isinstance(node, Op) and node.op == "neg":
        return -infinity_sign(node.args[0])
    if isinstance(node, Op) and node.op == "add" and len(node.args) == 1:
        return infinity_sign(node.args[0])
    return 0
