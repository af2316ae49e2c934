"""Is the predicted answer mathematically the reference? Pure comparison functions.

Order of tests, cheapest and most certain first: identical structure; exact rational
arithmetic (no tolerance); mpmath at 50 digits with free symbols sampled at fixed
generic points (a probabilistic identity test that, unlike `simplify`, cannot hang);
sympy only for what numerics cannot evaluate. A tolerance exists only when a side is a
written decimal, and then it is both relative and bounded by the written precision, so
`1/2^99` vs `1/2^98` and `1000000` vs `1000000.5` stay different.

Collection rules: `\\{...\\}` sets and bare comma lists (`1, 2`, `x = \\pm 3`) compare
without order; parenthesised tuples, vectors and intervals compare in order, and an
interval's brackets must match (`(1, 2]` is not `(1, 2)`); a one-variable inequality
equals the interval it describes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath  # type: ignore[import-untyped]

from services.reward_rules.math.nodes import (
    Call,
    Const,
    Matrix,
    Node,
    Num,
    Op,
    Pct,
    PlusMinus,
    Rel,
    Seq,
    SetOp,
    Sym,
    Text,
)
from services.reward_rules.math.normalize import text_key
from services.reward_rules.math.numeric import (
    DPS,
    EvalError,
    approx,
    decimals_of,
    exact,
    fold,
    free_symbols,
    has_inexact,
    infinity_sign,
)

__all__ = ["Comparison", "equivalent"]

# Generic points for the identity test: irrational-looking, away from poles, on both
# sides of zero and at several scales, so `|x|`, `\\sqrt{x^2}` and `|x-5|` are not
# mistaken for `x`, `x` and `5-x` (they agree with them on the positive or small points).
_POSITIVE_ROWS = (
    ("0.5772156649015328606", "1.3247179572447460260", "2.2360679774997896964"),
    ("1.6180339887498948482", "0.7071067811865475244", "3.1415926535897932385"),
    ("2.7182818284590452354", "1.7320508075688772935", "0.3183098861837906715"),
    ("7.3890560989306502272", "12.182493960703473438", "5.4365636569180904707"),
)
_SIGNS = ((1, 1, 1), (-1, -1, -1), (1, -1, 1), (-1, 1, -1))
_POINTS = tuple(
    tuple(("-" if sign < 0 else "") + value for sign, value in zip(signs, row, strict=True))
    for signs in _SIGNS
    for row in _POSITIVE_ROWS[: 4 if signs == (1, 1, 1) else 3 if signs == (-1, -1, -1) else 1]
)
_STRICT_REL = mpmath.mpf(10) ** (-(DPS - 12))
_ZERO = mpmath.mpf(10) ** (-(DPS - 10))
_MAX_ITEMS = 64
_BIG = mpmath.mpf(10) ** 20
_MAX_DPS = 3000

SymbolicCheck = Callable[[Node, Node], bool | None]


@dataclass
class Comparison:
    """Settings and bookkeeping for one comparison (which methods decided it)."""

    rel_tol: float = 1e-6
    symbolic: SymbolicCheck | None = None
    percent: str = "number"  # how `42%` compares with a plain number: "number" | "value"
    methods: list[str] = field(default_factory=list)
    used_symbolic: bool = False
    too_large: bool = False


def equivalent(gold: Node, pred: Node, comparison: Comparison | None = None) -> bool:
    """Whether `pred` answers `gold`; `comparison.methods` says how it was decided."""
    ctx = comparison or Comparison()
    return _equal(gold, pred, ctx)


def _equal(g: Node, p: Node, ctx: Comparison) -> bool:
    if g == p:
        ctx.methods.append("structure")
        return True
    if isinstance(g, Text) or isinstance(p, Text):
        return _text_equal(g, p, ctx)
    if isinstance(g, Rel) or isinstance(p, Rel):
        return _relation_cases(g, p, ctx)
    if isinstance(g, PlusMinus):
        g = _expand_pm(g)
    if isinstance(p, PlusMinus):
        p = _expand_pm(p)
    if isinstance(g, Seq | SetOp | Matrix) or isinstance(p, Seq | SetOp | Matrix):
        return _collection_equal(g, p, ctx)
    g, p = _signed_percent(g), _signed_percent(p)
    if isinstance(p, Pct) or isinstance(g, Pct):
        return _percent_equal(g, p, ctx)
    return _scalar_equal(g, p, ctx)


# -- words --------------------------------------------------------------------------------
# Abbreviations answers use for the same words.
_WORD_SYNONYMS = {"dne": "doesnotexist", "undefined": "doesnotexist", "nosolutions": "nosolution"}


def _word_key(text: str) -> str:
    key = text_key(text)
    return _WORD_SYNONYMS.get(key, key)


def _text_equal(g: Node, p: Node, ctx: Comparison) -> bool:
    if isinstance(g, Text) and isinstance(p, Text):
        if _word_key(g.text) == _word_key(p.text) and text_key(g.text):
            ctx.methods.append("text")
            return True
        return False
    word, other = (g, p) if isinstance(g, Text) else (p, g)
    assert isinstance(word, Text)
    if isinstance(other, Sym) and text_key(word.text) == text_key(other.name):
        ctx.methods.append("text")
        return True
    return False


# -- relations ----------------------------------------------------------------------------
def _is_label(node: Node) -> bool:
    """A name for a value: `x`, `a_1`, `f(x)`, `(a, b)`, `\\frac{AM}{MB}`, `S_1:S_2`, `\\lim a_n`.

    What follows `label =` in a reference or an answer is the value it gives. An
    expression such as `x + y` or `2x` is not a label: `x + y = 10` is an equation.
    """
    if not free_symbols(node):
        return False
    if isinstance(node, Sym | Call):
        return True
    if isinstance(node, Op) and node.op == "mul":
        return isinstance(node.args[0], Sym | Call)
    if isinstance(node, Op) and node.op == "div":
        return all(_is_label(a) for a in node.args)
    if isinstance(node, Seq):
        return bool(node.items) and all(_is_label(a) for a in node.items)
    return False


def _is_assignment(rel: Rel) -> bool:
    """`x = ...`, `a_1 = ...`, `f(x) = ...`, `(a, b) = (4, 9)`: a name, then its value."""
    return _is_label(rel.parts[0]) and all(op == "=" for op in rel.ops)


def _stated_value(rel: Rel) -> Node | None:
    """The value a relation states, or None when it is an equation or inequality to compare.

    `x = 2 + 3 + 4 = 9` states 9 (the last value of a chain); `\\frac{2}{7} \\approx 0.29`
    and `x = \\frac{2}{7} \\approx 0.29` state 2/7 (an approximation only rounds what comes
    before it); `x \\in [1, 4)` states the interval; `23 \\bmod 6 = 5` states 5.
    """
    ops, parts = rel.ops, rel.parts
    if ops[-1] == "in" and all(op in ("=", "in") for op in ops):
        return parts[-1]
    if not all(op in ("=", "approx") for op in ops):
        return None
    named = _is_label(parts[0])
    if not named and not free_symbols(parts[0]) and free_symbols(parts[-1]) and "approx" not in ops:
        # `7 = 11a + c`: a constant first, an expression last. The equation is the answer
        # (its unnamed side alone is not), unless the last side only names it (`7 = x`).
        return parts[0] if len(parts) == 2 and _is_label(parts[-1]) else None
    if not named and free_symbols(parts[0]):
        # An equation (`x + y = 10`), unless it is an identity that states a constant:
        # `\\sin^2\\theta + \\cos^2\\theta = 1` states 1.
        # A formula worked out (`-\\frac{b}{a} = -\\frac{-6}{2} = 3`) states its last value.
        if "approx" not in ops and (_identity(parts) or _worked_out(parts)):
            return parts[-1]
        return None
    if "approx" in ops:
        first = ops.index("approx")
        if first == 0 and named:
            return parts[-1] if len(parts) == 2 else parts[1]
        return parts[first]
    return parts[-1]


def _worked_out(parts: Sequence[Node]) -> bool:
    """A chain of three or more sides whose sides after the first are all constants."""
    return len(parts) >= 3 and not any(free_symbols(part) for part in parts[1:])


def _identity(parts: Sequence[Node]) -> bool:
    """Every side of an `=` chain is the same function and the last one is a constant."""
    if len(parts) > 4 or free_symbols(parts[-1]):
        return False
    names = sorted(set().union(*(free_symbols(part) for part in parts)))
    probe = Comparison()
    return all(_numeric_equal(part, parts[-1], names, False, probe) is True for part in parts[:-1])


def _approximation(rel: Rel) -> Node | None:
    """The rounded value written after `\\approx`, when there is one."""
    return rel.parts[rel.ops.index("approx") + 1] if "approx" in rel.ops else None


def _answer_of(rel: Rel) -> Node | None:
    """A relation as one comparable answer: its stated value or the interval it describes."""
    value = _stated_value(rel)
    return value if value is not None else _relation_interval(rel)


def _relation_cases(g: Node, p: Node, ctx: Comparison) -> bool:
    if isinstance(g, Rel) and isinstance(p, Rel):
        return _relations_equal(g, p, ctx)
    if isinstance(g, Rel):
        value = _answer_of(g)
        if value is None:
            return False
        if _equal(value, p, ctx):
            return True
        approximation = _approximation(g)
        return approximation is not None and has_inexact(p) and _equal(approximation, p, ctx)
    assert isinstance(p, Rel)
    stated = _stated_value(p)
    if stated is not None:
        # "x = 5", "k = 2 + 3 = 5", "x \\in (1, 2)": the answer is the value stated.
        return _equal(g, stated, ctx)
    interval = _relation_interval(p)
    return interval is not None and isinstance(g, Seq | SetOp) and _equal(g, interval, ctx)


def _flip(rel: Rel) -> Rel:
    """Write `>`/`>=` chains as `<`/`<=` chains, reversed."""
    if all(op in ("<", "<=") for op in rel.ops):
        return rel
    if all(op in (">", ">=") for op in rel.ops):
        flipped = tuple({">": "<", ">=": "<="}[op] for op in reversed(rel.ops))
        return Rel(flipped, tuple(reversed(rel.parts)))
    return rel


def _relations_equal(g: Rel, p: Rel, ctx: Comparison) -> bool:
    g, p = _flip(g), _flip(p)
    if g.ops != p.ops and ({"approx", "in"} & set(g.ops + p.ops) or len(g.parts) != len(p.parts)):
        gs, ps = _stated_value(g), _stated_value(p)
        if gs is not None and ps is not None:
            same_name = not (_is_label(g.parts[0]) and _is_label(p.parts[0])) or g.parts[0] == p.parts[0]
            return same_name and _equal(gs, ps, ctx)
        ga, pa = _answer_of(g), _answer_of(p)
        if ga is not None and pa is not None:
            return _equal(ga, pa, ctx)
    if g.ops != p.ops:
        if len(g.parts) == len(p.parts) == 2 and set(g.ops) | set(p.ops) <= {"=", "in"}:
            return _equal(g.parts[0], p.parts[0], ctx) and _equal(g.parts[1], p.parts[1], ctx)
        gi, pi = _relation_interval(g), _relation_interval(p)
        return gi is not None and pi is not None and _equal(gi, pi, ctx)
    if _is_assignment(g) and _is_assignment(p):
        return g.parts[0] == p.parts[0] and _equal(g.parts[-1], p.parts[-1], ctx)
    if len(g.parts) != 2 or len(p.parts) != 2:
        return len(g.parts) == len(p.parts) and all(
            _equal(a, b, ctx) for a, b in zip(g.parts, p.parts, strict=True)
        )
    if all(_equal(a, b, ctx) for a, b in zip(g.parts, p.parts, strict=True)):
        return True
    if g.ops[0] in ("=", "!="):
        if _equal(g.parts[0], p.parts[1], ctx) and _equal(g.parts[1], p.parts[0], ctx):
            return True
        return _proportional(_difference(g), _difference(p), ctx, positive=False)
    if g.ops[0] in ("<", "<="):
        return _proportional(_difference(g), _difference(p), ctx, positive=True)
    return False


def _difference(rel: Rel) -> Node:
    return Op("add", (rel.parts[1], Op("neg", (rel.parts[0],))))


def _proportional(a: Node, b: Node, ctx: Comparison, positive: bool) -> bool:
    """a = k·b for one constant k != 0 (k > 0 for inequalities): same equation/inequality."""
    names = sorted(free_symbols(a) | free_symbols(b))
    ratios = []
    for point in _points(names):
        try:
            va, vb = approx(a, point), approx(b, point)
        except EvalError:
            continue
        if _is_real(va) != _is_real(vb):
            continue
        if abs(vb) <= _ZERO or abs(va) <= _ZERO:
            if abs(vb) <= _ZERO and abs(va) <= _ZERO:
                continue
            return False
        ratios.append(va / vb)
    if len(ratios) < 2 and names:
        return False
    if not ratios:
        return False
    first = ratios[0]
    if positive and (isinstance(first, mpmath.mpc) or first <= 0):
        return False
    if all(abs(r - first) <= _STRICT_REL * abs(first) for r in ratios):
        ctx.methods.append("proportional")
        return True
    return False


def _relation_interval(rel: Rel) -> Node | None:
    """`x > 3` -> `(3, oo)`, `1 <= x < 2` -> `[1, 2)`; None if not one variable vs constants."""
    rel = _flip(rel)
    oo = Const("oo")
    if rel.ops == ("!=",) and isinstance(rel.parts[0], Sym) and not free_symbols(rel.parts[1]):
        # `x \\neq 0` is `(-oo, 0) U (0, oo)`.
        point = rel.parts[1]
        return SetOp("union", (Seq("(", ")", (Op("neg", (oo,)), point)), Seq("(", ")", (point, oo))))
    if not all(op in ("<", "<=") for op in rel.ops):
        return None
    if len(rel.parts) == 2:
        left, right = rel.parts
        strict = rel.ops[0] == "<"
        if _is_abs_of_symbol(left) and not free_symbols(right):
            # `|x| <= 2` is `[-2, 2]`.
            return Seq("(" if strict else "[", ")" if strict else "]", (Op("neg", (right,)), right))
        if _is_abs_of_symbol(right) and not free_symbols(left):
            # `|x| > 2` is `(-oo, -2) U (2, oo)`.
            below = Seq("(", ")" if strict else "]", (Op("neg", (oo,)), Op("neg", (left,))))
            return SetOp("union", (below, Seq("(" if strict else "[", ")", (left, oo))))
        if isinstance(left, Sym) and not free_symbols(right):
            return Seq("(", ")" if strict else "]", (Op("neg", (oo,)), right))
        if isinstance(right, Sym) and not free_symbols(left):
            return Seq("(" if strict else "[", ")", (left, oo))
        return None
    if len(rel.parts) == 3 and isinstance(rel.parts[1], Sym):
        low, _, high = rel.parts
        if free_symbols(low) or free_symbols(high):
            return None
        return Seq("(" if rel.ops[0] == "<" else "[", ")" if rel.ops[1] == "<" else "]", (low, high))
    return None


def _is_abs_of_symbol(node: Node) -> bool:
    return (
        isinstance(node, Call) and node.fn == "abs" and len(node.args) == 1 and isinstance(node.args[0], Sym)
    )


# -- collections --------------------------------------------------------------------------
def _expand_pm(node: PlusMinus) -> Seq:
    if node.base is None:
        return Seq("", "", (node.delta, Op("neg", (node.delta,))))
    return Seq("", "", (Op("add", (node.base, node.delta)), Op("add", (node.base, Op("neg", (node.delta,))))))


def _kind(seq: Seq) -> str:
    if seq.open == ":":
        return "ratio"
    if seq.open == "{":
        return "set"
    if seq.open == "":
        return "list"
    if seq.open == "<" or (seq.open, seq.close) == ("(", ")"):
        return "tuple"
    if (seq.open, seq.close) == ("[", "]"):
        return "vector"
    return "interval"


def _collection_equal(g: Node, p: Node, ctx: Comparison) -> bool:
    if isinstance(g, Matrix) or isinstance(p, Matrix):
        return _matrix_equal(g, p, ctx)
    if isinstance(g, SetOp) or isinstance(p, SetOp):
        g, p = _as_union(g), _as_union(p)
        if isinstance(g, SetOp) and isinstance(p, SetOp) and g.op == p.op:
            return _unordered(g.args, p.args, ctx)
        return False
    for ratio, other in ((g, p), (p, g)):
        # `3:4` against `\\frac{3}{4}`: a ratio of two numbers is their quotient.
        if (
            isinstance(ratio, Seq)
            and _kind(ratio) == "ratio"
            and len(ratio.items) == 2
            and not isinstance(other, Seq)
        ):
            return not free_symbols(other) and _equal(Op("div", ratio.items), other, ctx)
    if not isinstance(g, Seq):
        assert isinstance(p, Seq)
        if _kind(p) == "list" and 1 < len(p.items) <= 4:
            # "$\\frac{3}{2}$ or $1.5$": one value said twice; every item must be it.
            return all(_equal(g, item, ctx) for item in p.items)
        return len(p.items) == 1 and _kind(p) in ("set", "list", "tuple") and _equal(g, p.items[0], ctx)
    if not isinstance(p, Seq):
        return len(g.items) == 1 and _kind(g) in ("set", "list", "tuple") and _equal(g.items[0], p, ctx)
    if len(g.items) > _MAX_ITEMS or len(p.items) > _MAX_ITEMS:
        return False
    gk, pk = _kind(g), _kind(p)
    g_items, p_items = _flatten_pm(g.items), _flatten_pm(p.items)
    if "ratio" in (gk, pk):
        return gk == pk and (_ordered(g_items, p_items, ctx) or _same_ratio(g_items, p_items, ctx))
    if gk == "interval" or pk == "interval":
        if (g.open, g.close) != (p.open, p.close) and not (gk == "tuple" and pk == "tuple"):
            return False
        return _ordered(g_items, p_items, ctx)
    if gk == pk == "set":
        # `\\{1, 2, 2\\}` is the set `\\{1, 2\\}`.
        g_items, p_items = tuple(dict.fromkeys(g_items)), tuple(dict.fromkeys(p_items))
    if gk in ("set", "list"):
        return _unordered(g_items, p_items, ctx)
    if pk == "set" and gk in ("tuple", "vector"):
        return False
    if gk != pk and "list" not in (gk, pk) and {gk, pk} != {"tuple", "vector"}:
        return False
    if {gk, pk} == {"tuple", "vector"} and len(g_items) == 2:
        return False  # (a, b) vs [a, b]: an open vs a closed interval
    return _ordered(g_items, p_items, ctx)


def _as_union(node: Node) -> Node:
    """`x < -1, x > 3` (from "x < -1 or x > 3") as the union of the intervals it describes."""
    if not isinstance(node, Seq) or node.open != "" or len(node.items) < 2:
        return node
    intervals = [_relation_interval(item) if isinstance(item, Rel) else None for item in node.items]
    if any(interval is None for interval in intervals):
        return node
    return SetOp("union", tuple(i for i in intervals if i is not None))


def _same_ratio(g_items: Sequence[Node], p_items: Sequence[Node], ctx: Comparison) -> bool:
    """`5:12` and `10:24` are one ratio: a:b = c:d when a·d = b·c."""
    if len(g_items) != 2 or len(p_items) != 2:
        return False
    (a, b), (c, d) = g_items, p_items
    if any(exact(item) == 0 for item in (a, b, c, d)):
        # `1:00` and `12:00`: a zero part makes every cross product equal; compare in order.
        return False
    return _scalar_equal(Op("mul", (a, d)), Op("mul", (b, c)), ctx)


def _flatten_pm(items: Sequence[Node]) -> tuple[Node, ...]:
    out: list[Node] = []
    for item in items:
        if isinstance(item, PlusMinus):
            out.extend(_expand_pm(item).items)
        else:
            out.append(item)
    return tuple(out)


def _ordered(g_items: Sequence[Node], p_items: Sequence[Node], ctx: Comparison) -> bool:
    return len(g_items) == len(p_items) and all(
        _equal(a, b, ctx) for a, b in zip(g_items, p_items, strict=True)
    )


def _unordered(g_items: Sequence[Node], p_items: Sequence[Node], ctx: Comparison) -> bool:
    if len(g_items) != len(p_items):
        return False
    unused = list(p_items)
    for item in g_items:
        for index, candidate in enumerate(unused):
            if _equal(item, candidate, ctx):
                del unused[index]
                break
        else:
            return False
    return True


def _matrix_equal(g: Node, p: Node, ctx: Comparison) -> bool:
    def cells(node: Node) -> tuple[tuple[int, int], list[Node]] | None:
        if isinstance(node, Matrix):
            return (len(node.rows), len(node.rows[0])), [c for row in node.rows for c in row]
        if isinstance(node, Seq) and _kind(node) in ("tuple", "vector"):
            return (len(node.items), 1), list(node.items)
        return None

    gc, pc = cells(g), cells(p)
    if gc is None or pc is None:
        return False
    (g_shape, g_cells), (p_shape, p_cells) = gc, pc
    vectors = 1 in g_shape and 1 in p_shape and len(g_cells) == len(p_cells)
    if g_shape != p_shape and not (vectors and (isinstance(g, Seq) or isinstance(p, Seq))):
        return False
    return _ordered(g_cells, p_cells, ctx)


# -- numbers ------------------------------------------------------------------------------
def _percent_equal(g: Node, p: Node, ctx: Comparison) -> bool:
    """`42%` against a plain number, by the configured rule (never both readings at once).

    "number" (the default, as MATH's and GSM8K's normalisers strip `\\%`): `42%` is the
    number 42 with a unit, so it answers `42` and not `0.42`. "value": `42%` is 0.42, so
    it answers `0.42` and not `42`. `42%` against `42%` compares the numbers.
    """
    if isinstance(g, Pct) and isinstance(p, Pct):
        return _scalar_equal(g.arg, p.arg, ctx)
    g_value, p_value = (_percent_as(n, ctx.percent) for n in (g, p))
    return _equal(g_value, p_value, ctx)


def _signed_percent(node: Node) -> Node:
    """`-20\\%` parsed as -(20%) is the percent -20%."""
    if isinstance(node, Op) and node.op == "neg" and isinstance(node.args[0], Pct):
        return Pct(Op("neg", (node.args[0].arg,)))
    return node


def _percent_as(node: Node, rule: str) -> Node:
    if not isinstance(node, Pct):
        return node
    return node.arg if rule == "number" else Op("div", (node.arg, Num(Fraction(100))))


def _scalar_equal(g: Node, p: Node, ctx: Comparison) -> bool:
    g_inf, p_inf = infinity_sign(g), infinity_sign(p)
    if g_inf or p_inf:
        return g_inf == p_inf
    inexact = has_inexact(g) or has_inexact(p)
    ge, pe = exact(g), exact(p)
    if ge is not None and pe is not None:
        if ge == pe:
            ctx.methods.append("exact")
            return True
        if not inexact:
            return False
        return _close_inexact(_mp(ge), _mp(pe), g, p, ctx)
    names = sorted(free_symbols(g) | free_symbols(p))
    verdict = _numeric_equal(g, p, names, inexact, ctx)
    if verdict is not None:
        return verdict
    if ctx.too_large:
        if fold(g) == fold(p):
            ctx.methods.append("canonical structure")
            return True
        return False
    if ctx.symbolic is not None:
        ctx.used_symbolic = True
        decided = ctx.symbolic(g, p)
        if decided:
            ctx.methods.append("sympy")
        return bool(decided)
    return False


def _numeric_equal(g: Node, p: Node, names: list[str], inexact: bool, ctx: Comparison) -> bool | None:
    """Compare values at generic points; None when they cannot be evaluated.

    Large magnitudes are re-evaluated with enough digits that an absolute difference of
    1 still shows (`10^{60}` vs `10^{60}+1`); beyond `_MAX_DPS` digits it gives up.
    """
    dps = DPS
    for _ in range(2):
        values: list[tuple[Any, Any]] = []
        for point in _points(names):
            try:
                pair = (approx(g, point, dps), approx(p, point, dps))
            except EvalError as error:
                if "too large" in str(error):
                    ctx.too_large = True
                    return None
                continue
            if names and _is_real(pair[0]) != _is_real(pair[1]):
                continue  # outside one side's real domain (`\\sqrt{x}` at x < 0): no evidence
            values.append(pair)
        # Where both sides are real, if there are such points: `\\frac{1}{\\sqrt{n}}` and
        # `\\sqrt{1/n}` agree for n > 0 and take different complex branches for n < 0,
        # while `|x|` and `x` (real everywhere) still differ at negative points.
        real = [pair for pair in values if _is_real(pair[0]) and _is_real(pair[1])]
        if names and len(real) >= 2:
            values = real
        if not values or (names and len(values) < 2):
            return None
        magnitude = max(max(abs(a), abs(b)) for a, b in values)
        if magnitude > _BIG and dps == DPS:
            with mpmath.workdps(DPS):
                digits = int(mpmath.log10(magnitude)) + DPS
            if digits > _MAX_DPS:
                ctx.too_large = True
                return None
            dps = digits
            continue
        if inexact and not names:
            return _close_inexact(values[0][0], values[0][1], g, p, ctx)
        rel = mpmath.mpf(10) ** (-(dps - 12))
        if all(_close_strict(a, b, rel, dps) for a, b in values):
            ctx.methods.append("numeric")
            return True
        return False
    return None


def _is_real(value: Any) -> bool:
    return not isinstance(value, mpmath.mpc) or value.imag == 0


def _mp(value: Fraction) -> Any:
    with mpmath.workdps(DPS):
        return mpmath.mpf(value.numerator) / value.denominator


def _close_strict(a: Any, b: Any, rel: Any, dps: int) -> bool:
    with mpmath.workdps(dps):
        diff = abs(a - b)
        if diff <= _ZERO:
            return True
        return bool(diff <= rel * max(abs(a), abs(b)))


def _close_inexact(gv: Any, pv: Any, g: Node, p: Node, ctx: Comparison) -> bool:
    """A written decimal matches when it is the other value to the digits written.

    `1/3` accepts `0.333333` (relative error <= rel_tol and within one unit of the last
    written digit); `1000000` does not accept `1000000.5`. A response that only rounds to
    the reference is not it: `3.753` is not `3.75` (a reference is most often exact, and
    a wrong answer paid costs more than a rounded one missed; Math-Verify agrees), and an
    exact answer (`\\frac{2}{3}`, `\\pi`) is not a rounded reference (`0.67`).
    """
    with mpmath.workdps(DPS):
        diff = abs(gv - pv)
        scale = max(abs(gv), abs(pv))
        g_dec, p_dec = decimals_of(g), decimals_of(p)
        if scale == 0 or diff > ctx.rel_tol * scale * (1 + mpmath.mpf("1e-9")):
            return False
        written = p_dec if p_dec is not None else g_dec
        if written is not None and diff > mpmath.mpf(10) ** (-written) * (1 + mpmath.mpf("1e-12")):
            return False
        ctx.methods.append("tolerance")
        return True


def _points(names: Sequence[str]) -> list[dict[str, Any]]:
    if not names:
        return [{}]
    points = []
    with mpmath.workdps(DPS):
        for row in _POINTS:
            points.append(
                {
                    name: mpmath.mpf(row[i % len(row)]) + mpmath.mpf(i // len(row)) / 7
                    for i, name in enumerate(names)
                }
            )
    return points
