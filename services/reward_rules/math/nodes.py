"""The small structured form every answer is parsed into.

Frozen dataclasses, hashable and picklable, cheap to build: comparison works on these
directly (exact rationals, mpmath numerics) and only converts to sympy when it must.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Union

__all__ = [
    "Call",
    "Const",
    "Matrix",
    "Node",
    "Num",
    "Op",
    "Pct",
    "PlusMinus",
    "Rel",
    "Seq",
    "SetOp",
    "Sym",
    "Text",
]


@dataclass(frozen=True, slots=True)
class Num:
    """A literal number. `decimals` is the number of written decimals (None: exact literal)."""

    value: Fraction
    decimals: int | None = None


@dataclass(frozen=True, slots=True)
class Sym:
    name: str


@dataclass(frozen=True, slots=True)
class Const:
    """`pi`, `e`, `i` (imaginary unit) or `oo` (infinity)."""

    name: str


@dataclass(frozen=True, slots=True)
class Op:
    """`add`/`mul` (n-ary), `neg`, `div`, `pow`, `fact` (factorial)."""

    op: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Call:
    """A named function: sqrt, root (index first), sin, log (base first), abs, binom, ..."""

    fn: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Pct:
    """`x%`: compared both as x/100 and as x (graders disagree; both are accepted)."""

    arg: Node


@dataclass(frozen=True, slots=True)
class PlusMinus:
    """`a \\pm b` (base None for `\\pm b`): the two-element answer {a+b, a-b}."""

    base: Node | None
    delta: Node


@dataclass(frozen=True, slots=True)
class Rel:
    """A relation chain: parts[0] ops[0] parts[1] ops[1] ... with ops in = < <= > >= != in."""

    ops: tuple[str, ...]
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Seq:
    """A bracketed or bare comma list; `open`/`close` are the brackets as written.

    open/close: "(" ")" "[" "]" "{" (set braces) "<" (angle) or "" (bare list).
    """

    open: str
    close: str
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class SetOp:
    """`\\cup` / `\\cap` / `\\setminus` of sets or intervals."""

    op: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Matrix:
    rows: tuple[tuple[Node, ...], ...]


@dataclass(frozen=True, slots=True)
class Text:
    """A word answer (`Monday`, `even`, `no solution`)."""

    text: str


Node = Union[Num, Sym, Const, Op, Call, Pct, PlusMinus, Rel, Seq, SetOp, Matrix, Text]  # noqa: UP007


# Function names both the normaliser and the parser must know.
FUNCTION_NAMES = frozenset(
    {
        "sin",
        "cos",
        "tan",
        "sec",
        "csc",
        "cot",
        "arcsin",
        "arccos",
        "arctan",
        "arcsec",
        "arccsc",
        "arccot",
        "sinh",
        "cosh",
        "tanh",
        "coth",
        "sech",
        "csch",
        "log",
        "ln",
        "lg",
        "exp",
    }
)
