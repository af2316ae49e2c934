"""LaTeX / plain-text answer -> `nodes.Node`, by a small recursive-descent parser.

Why not latex2sympy: an ANTLR parse plus sympy construction costs milliseconds per
answer and can evaluate `5^(5^5^5)` while building it. This parser costs tens of
microseconds, never evaluates anything, and rejects what it does not understand
(raising ParseError) instead of salvaging a number out of it: a half-understood answer
is compared as a string, never as a different expression.
"""

from __future__ import annotations

import re
from fractions import Fraction

from services.reward_rules.math.nodes import (
    FUNCTION_NAMES,
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

__all__ = ["MAX_ANSWER_CHARS", "ParseError", "parse_answer"]

# Longer "answers" are prose or runaway output; they are compared as strings only.
MAX_ANSWER_CHARS = 2000
_MAX_DEPTH = 60

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
   |(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+(?![a-zA-Z\d]))?)
   |(?P<begin>\\begin\s*\{\s*[a-zA-Z*]+\s*\}(?:\s*\{[lcr|\s]*\})?)
   |(?P<end>\\end\s*\{\s*[a-zA-Z*]+\s*\})
   |(?P<cmd>\\[a-zA-Z]+)
   |(?P<esc>\\[^a-zA-Z\s])
   |(?P<word>[a-zA-Z]+)
   |(?P<op><=|>=|!=|\*\*|[-+*/^_()\[\]{},;=<>!|&'%:])
   |(?P<uni>[≤≥≠×÷·√π∞±∓∪∩∈⋅≈])
    """,
    re.X,
)

_REL_CMDS = {
    "\\le": "<=",
    "\\leq": "<=",
    "\\leqslant": "<=",
    "\\leqq": "<=",
    "\\ge": ">=",
    "\\geq": ">=",
    "\\geqslant": ">=",
    "\\geqq": ">=",
    "\\lt": "<",
    "\\gt": ">",
    "\\ne": "!=",
    "\\neq": "!=",
    "\\approx": "approx",
    "\\simeq": "approx",
    "≈": "approx",
    "\\cong": "=",
    "\\equiv": "=",
    "\\in": "in",
    "<=": "<=",
    ">=": ">=",
    "!=": "!=",
    "=": "=",
    "<": "<",
    ">": ">",
    "≤": "<=",
    "≥": ">=",
    "≠": "!=",
    "∈": "in",
}
_MUL_CMDS = {"\\cdot", "\\times", "\\ast", "*", "**", "×", "·", "⋅"}
_DIV_CMDS = {"\\div", "/", "÷"}
_MOD_CMDS = {"\\bmod", "\\mod"}
_LIST_FUNCS = {"gcd", "lcm", "max", "min"}
_NAMING_CMDS = {
    "\\angle",
    "\\measuredangle",
    "\\triangle",
    "\\overline",
    "\\overrightarrow",
    "\\overleftrightarrow",
    "\\widehat",
    "\\hat",
    "\\bar",
    "\\tilde",
    "\\arc",
}
_SET_CMDS = {"\\cup": "union", "\\cap": "intersect", "\\setminus": "minus", "∪": "union", "∩": "intersect"}
_FUNCS = FUNCTION_NAMES
_FUNC_ALIASES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "tg": "tan", "ctg": "cot"}
_GREEK = {
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Sigma",
    "Phi",
    "Psi",
    "Omega",
    "ell",
}
_IGNORED_CMDS = {"\\limits", "\\nolimits", "\\displaystyle", "\\circ", "\\degree", "\\mathstrut"}
_UNWRAP_CMDS = {
    "\\text",
    "\\textrm",
    "\\textbf",
    "\\textit",
    "\\mathrm",
    "\\mathbf",
    "\\mathit",
    "\\mathsf",
    "\\operatorname",
    "\\mbox",
    "\\boldsymbol",
    "\\bm",
    "\\boxed",
    "\\fbox",
    "\\mathbb",
    "\\vec",
}
_MATRIX_ENVS = {"matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "array"}
_ATOM_START_CMDS = (
    {"\\frac", "\\sqrt", "\\binom", "\\lim", "\\pi", "\\infty", "\\lfloor", "\\lceil", "\\langle", "\\imath"}
    | {"\\" + f for f in _LIST_FUNCS}
    | _NAMING_CMDS
    | {"\\" + f for f in _FUNCS}
    | {"\\" + g for g in _GREEK}
    | _UNWRAP_CMDS
)


class ParseError(ValueError):
    """The answer is not an expression this parser understands."""


Token = tuple[str, str]


def _tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ParseError(f"unexpected character {text[pos]!r}")
        kind = match.lastgroup or ""
        value = match.group(0)
        pos = match.end()
        if kind == "ws":
            continue
        if kind == "cmd" and value in _IGNORED_CMDS:
            continue
        if kind == "begin":
            value = re.sub(r"\\begin\s*\{\s*([a-zA-Z*]+)\s*\}.*", r"\1", value, flags=re.S)
        elif kind == "end":
            value = re.sub(r"\\end\s*\{\s*([a-zA-Z*]+)\s*\}", r"\1", value)
        tokens.append((kind, value))
    return tokens


def _number(text: str) -> Num:
    value = Fraction(text)
    if "." in text or "e" in text.lower():
        mantissa = text.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return Num(value, decimals)
    return Num(value)


def _int_literal(node: Node) -> int | None:
    if isinstance(node, Num) and node.decimals is None and node.value.denominator == 1:
        return int(node.value)
    return None


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    # -- token helpers -------------------------------------------------------------------
    def peek(self, offset: int = 0) -> Token | None:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise ParseError("unexpected end of answer")
        self.pos += 1
        return token

    def at(self, *values: str) -> bool:
        token = self.peek()
        return token is not None and token[1] in values

    def accept(self, *values: str) -> bool:
        if self.at(*values):
            self.pos += 1
            return True
        return False

    def expect(self, *values: str) -> str:
        token = self.next()
        if token[1] not in values:
            raise ParseError(f"expected {' or '.join(values)}, got {token[1]!r}")
        return token[1]

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ParseError("answer nested too deeply")

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> Node:
        items = self.items(closers=())
        if self.peek() is not None:
            raise ParseError(f"unexpected {self.peek()!r}")
        return items[0] if len(items) == 1 else Seq("", "", tuple(items))

    def items(self, closers: tuple[str, ...]) -> list[Node]:
        items = [self.relation()]
        while self.accept(",", ";"):
            if self.peek() is None or self.at(*closers):
                break  # a trailing comma
            items.append(self.relation())
        return items

    def relation(self) -> Node:
        parts = [self.set_expr()]
        ops: list[str] = []
        while (token := self.peek()) is not None and token[1] in _REL_CMDS:
            self.pos += 1
            ops.append(_REL_CMDS[token[1]])
            parts.append(self.set_expr())
        return Rel(tuple(ops), tuple(parts)) if ops else parts[0]

    def set_expr(self) -> Node:
        left = self.ratio()
        while (token := self.peek()) is not None and token[1] in _SET_CMDS:
            self.pos += 1
            op = _SET_CMDS[token[1]]
            right = self.ratio()
            if isinstance(left, SetOp) and left.op == op:
                left = SetOp(op, (*left.args, right))
            else:
                left = SetOp(op, (left, right))
        return left

    def ratio(self) -> Node:
        """`5:12`, `S_1:S_2`: a ratio is its own kind of answer (a Seq opened by ':')."""
        parts = [self.additive()]
        while self.accept(":"):
            parts.append(self.additive())
        return parts[0] if len(parts) == 1 else Seq(":", "", tuple(parts))

    def additive(self) -> Node:
        self.enter()
        try:
            if self.accept("\\pm", "±", "\\mp", "∓"):
                left: Node = PlusMinus(None, self.term())
            else:
                left = self.term()
            terms = [left]
            while True:
                if self.accept("+"):
                    terms.append(self.term())
                elif self.accept("-"):
                    terms.append(Op("neg", (self.term(),)))
                elif self.accept("\\pm", "±", "\\mp", "∓"):
                    base = terms[0] if len(terms) == 1 else Op("add", tuple(terms))
                    terms = [PlusMinus(base, self.term())]
                else:
                    break
            return terms[0] if len(terms) == 1 else Op("add", tuple(terms))
        finally:
            self.depth -= 1

    def term(self) -> Node:
        if self.accept("-"):
            return Op("neg", (self.term(),))
        if self.accept("+"):
            return self.term()
        factors = [self.power()]
        while True:
            token = self.peek()
            if token is None:
                break
            if token[1] in _MUL_CMDS:
                self.pos += 1
                factors.append(self.signed_power())
            elif token[1] in _DIV_CMDS:
                self.pos += 1
                divisor = self.signed_power()
                numerator = factors[0] if len(factors) == 1 else Op("mul", tuple(factors))
                factors = [Op("div", (numerator, divisor))]
            elif token[1] == "%":
                self.pos += 1
                factors[-1] = Pct(factors[-1])
            elif token[1] in _MOD_CMDS:
                self.pos += 1
                left = factors[0] if len(factors) == 1 else Op("mul", tuple(factors))
                factors = [Op("mod", (left, self.signed_power()))]
            elif self.starts_atom(token):
                if token[0] == "num" and isinstance(factors[-1], Num):
                    raise ParseError("two numbers side by side")
                if token[1] == "\\frac" and (whole := _int_literal(factors[-1])) is not None:
                    fraction = self.power()
                    mixed = _mixed_number(whole, fraction)
                    factors[-1] = mixed if mixed is not None else Op("mul", (factors[-1], fraction))
                    continue
                factors.append(self.power())
            else:
                break
        return factors[0] if len(factors) == 1 else Op("mul", tuple(factors))

    def signed_power(self) -> Node:
        if self.accept("-"):
            return Op("neg", (self.signed_power(),))
        self.accept("+")
        return self.power()

    def starts_atom(self, token: Token) -> bool:
        kind, value = token
        if kind in ("num", "word", "begin"):
            return True
        if kind == "cmd":
            return value in _ATOM_START_CMDS
        if kind == "esc":
            return value == "\\{"
        return value in ("(", "[", "√", "π", "∞") or (kind == "op" and value == "{")

    def power(self) -> Node:
        base = self.postfix()
        if self.accept("^"):
            exponent = self.exponent()
            base = Op("pow", (base, exponent))
            while self.accept("!"):
                base = Op("fact", (base,))
        return base

    def exponent(self) -> Node:
        self.enter()
        try:
            if self.accept("-"):
                return Op("neg", (self.exponent(),))
            self.accept("+")
            if self.at("{"):
                return self.power_of(self.group("{", "}"))
            return self.power()
        finally:
            self.depth -= 1

    def power_of(self, base: Node) -> Node:
        if self.accept("^"):
            return Op("pow", (base, self.exponent()))
        return base

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.accept("!"):
                node = Op("fact", (node,))
            elif self.at("_") and isinstance(node, Sym):
                self.pos += 1
                node = Sym(node.name + "_" + self.subscript())
            elif self.at("_") and isinstance(node, Num):
                self.pos += 1
                base = self.subscript()
                node = Call("base", (node, Num(Fraction(int(base))) if base.isdigit() else Sym(base)))
            elif self.accept("'"):
                node = Call("prime", (node,))
            else:
                return node

    def subscript(self) -> str:
        """A subscript is part of a name (`k_{\\max}`, `a_{n+1}`): kept as written, not parsed."""
        if self.at("{"):
            start = self.pos
            self.raw_group()
            return "".join(t[1] for t in self.tokens[start + 1 : self.pos - 1])
        token = self.next()
        if token[0] == "num" and len(token[1]) > 1 and token[1].isdigit():
            self.split_current(1, back=True)
            return token[1][0]
        return token[1]

    def raw_group(self) -> None:
        """Skip one token or one balanced `{...}` group without parsing it (`n \\to \\infty`)."""
        if not self.accept("{"):
            self.next()
            return
        depth = 1
        while depth:
            value = self.next()[1]
            depth += {"{": 1, "}": -1}.get(value, 0)

    def split_current(self, keep: int, back: bool = False) -> None:
        """Split a multi-character token so `\\frac12` reads as `\\frac{1}{2}`."""
        index = self.pos - 1 if back else self.pos
        kind, value = self.tokens[index]
        self.tokens[index : index + 1] = [(kind, value[:keep]), (kind, value[keep:])]

    def group(self, opener: str, closer: str) -> Node:
        self.expect(opener)
        if self.accept(closer):
            return Seq("{", "}", ()) if opener == "\\{" else Text("")
        items = self.items(closers=(closer,))
        self.expect(closer)
        if len(items) == 1 and opener == "{":
            return items[0]
        return Seq("{" if opener in ("{", "\\{") else opener, "}", tuple(items))

    def argument(self) -> Node:
        """A macro argument: `{...}`, or one character/token as TeX reads `\\frac12`."""
        token = self.peek()
        if token is None:
            raise ParseError("missing argument")
        if token[1] == "{":
            return self.group("{", "}")
        if token[0] in ("num", "word") and len(token[1]) > 1:
            self.split_current(1)
        return self.primary()

    def primary(self) -> Node:
        self.enter()
        try:
            return self._primary()
        finally:
            self.depth -= 1

    def _primary(self) -> Node:
        kind, value = self.next()
        if kind == "num":
            return _number(value)
        if kind == "word":
            return self.word(value)
        if kind == "begin":
            return self.environment(value)
        if value in ("(", "["):
            return self.bracket(value)
        if value == "{":
            self.pos -= 1
            return self.group("{", "}")
        if value == "\\{":
            self.pos -= 1
            return self.group("\\{", "\\}")
        if value in ("|", "\\lvert", "\\vert", "\\|"):
            inner = self.additive()
            self.expect("|", "\\rvert", "\\vert", "\\|")
            return Call("abs", (inner,))
        if value in ("√",):
            return Call("sqrt", (self.power(),))
        if value in ("π", "\\pi"):
            return Const("pi")
        if value in ("∞", "\\infty"):
            return Const("oo")
        if value == "\\imath":
            return Const("i")
        if value in ("\\emptyset", "\\varnothing"):
            return Seq("{", "}", ())
        if kind == "cmd":
            return self.command(value)
        raise ParseError(f"unexpected {value!r}")

    def word(self, value: str) -> Node:
        lowered = value.lower()
        name = _FUNC_ALIASES.get(lowered, lowered)
        if name in _FUNCS or name == "sqrt":
            return self.function(name)
        if lowered in _LIST_FUNCS and self.at("("):
            return self.list_function(lowered)
        if lowered == "pi":
            return Const("pi")
        if lowered in ("infty", "infinity", "inf", "oo"):
            return Const("oo")
        if len(value) > 1:
            # TeX math reads `xy` as x·y; push the letters back one at a time.
            self.tokens[self.pos - 1 : self.pos] = [("word", letter) for letter in value]
            value = value[0]
        if value == "e":
            return Const("e")
        if value == "i":
            return Const("i")
        return Sym(value)

    def command(self, value: str) -> Node:
        name = value[1:]
        if value == "\\frac":
            numerator = self.argument()
            denominator = self.argument()
            return Op("div", (numerator, denominator))
        if value == "\\sqrt":
            if self.accept("["):
                index = self.relation()
                self.expect("]")
                return Call("root", (index, self.argument()))
            return Call("sqrt", (self.argument(),))
        if value == "\\binom":
            return Call("binom", (self.argument(), self.argument()))
        if value in _NAMING_CMDS:
            # `\\angle ABC`, `\\overline{AB}`: names of geometric quantities, never values.
            return Call(name, (self.argument() if self.at("{") else self.postfix(),))
        if value == "\\lim":
            # `\lim_{n \to \infty} a_n`: a name for a value (it has no value of its own here).
            start = self.pos
            if self.accept("_"):
                self.raw_group()
            under = "".join(t[1] for t in self.tokens[start : self.pos])
            return Call("lim", (Text(under), self.term()))
        if name in _FUNCS:
            return self.function(name)
        if name in _LIST_FUNCS and self.at("("):
            return self.list_function(name)
        if name in _GREEK:
            return Sym(name)
        if value in _UNWRAP_CMDS:
            return self.argument()
        if value == "\\lfloor":
            inner = self.additive()
            self.expect("\\rfloor")
            return Call("floor", (inner,))
        if value == "\\lceil":
            inner = self.additive()
            self.expect("\\rceil")
            return Call("ceil", (inner,))
        if value == "\\langle":
            items = self.items(closers=("\\rangle",))
            self.expect("\\rangle")
            return Seq("<", ">", tuple(items))
        raise ParseError(f"unsupported command {value}")

    def list_function(self, name: str) -> Node:
        """`\\gcd(4, 6)`, `\\max(a, b)`, `lcm(2, 3)`: a function of a list of arguments."""
        self.expect("(")
        items = self.items(closers=(")",))
        self.expect(")")
        return Call(name, tuple(items))

    def function(self, name: str) -> Node:
        base: Node | None = None
        power: Node | None = None
        if name == "log" and self.accept("_"):
            base = self.argument()
        if self.accept("^"):
            power = self.exponent()
        if name == "log" and base is None and self.accept("_"):
            base = self.argument()
        if self.at("("):
            self.pos += 1
            argument = self.additive()
            self.expect(")")
        else:
            factors = [self.power()]
            while (
                (token := self.peek()) is not None
                and token[0] in ("num", "word")
                and not (token[0] == "word" and token[1].lower() in _FUNCS)
            ):
                if token[0] == "num" and isinstance(factors[-1], Num):
                    break
                factors.append(self.power())
            argument = factors[0] if len(factors) == 1 else Op("mul", tuple(factors))
        inverse = isinstance(power, Op) and power.op == "neg" and power.args == (Num(Fraction(1)),)
        if inverse and name in ("sin", "cos", "tan", "sec", "csc", "cot"):
            return Call("arc" + name, (argument,))
        call = Call(name, (base, argument) if base is not None else (argument,))
        if name == "lg":
            call = Call("log", (Num(Fraction(10)), argument))
        return Op("pow", (call, power)) if power is not None else call

    def bracket(self, opener: str) -> Node:
        closer_options = (")", "]")
        if self.at(*closer_options):
            closer = self.next()[1]
            return Seq(opener, closer, ())
        items = self.items(closers=closer_options)
        closer = self.expect(*closer_options)
        if len(items) == 1 and opener == "(" and closer == ")":
            return items[0]
        if len(items) == 1 and opener == "[" and closer == "]":
            return items[0]
        return Seq(opener, closer, tuple(items))

    def environment(self, env: str) -> Node:
        if env.rstrip("*") not in _MATRIX_ENVS:
            raise ParseError(f"unsupported environment {env}")
        rows: list[tuple[Node, ...]] = []
        row: list[Node] = []
        while True:
            if self.at(env) and self.peek() is not None and self.tokens[self.pos][0] == "end":
                self.pos += 1
                break
            row.append(self.relation())
            if self.accept("&"):
                continue
            if self.accept("\\\\"):
                rows.append(tuple(row))
                row = []
                continue
            token = self.next()
            if token[0] == "end":
                break
            raise ParseError(f"unexpected {token[1]!r} in matrix")
        if row:
            rows.append(tuple(row))
        if not rows or len({len(r) for r in rows}) != 1:
            raise ParseError("ragged matrix")
        return Matrix(tuple(rows))


def _mixed_number(whole: int, fraction: Node) -> Node | None:
    """`2\\frac{1}{2}` is 5/2 (a mixed number), not 2·(1/2)."""
    if isinstance(fraction, Op) and fraction.op == "div":
        num, den = (_int_literal(arg) for arg in fraction.args)
        if num is not None and den and 0 < num < den:
            sign = -1 if whole < 0 else 1
            return Num(Fraction(whole) + sign * Fraction(num, den))
    return None


_WORDS_ONLY = re.compile(r"^[A-Za-z][A-Za-z\s'-]*[A-Za-z.]?$")
_SINGLE_LETTERS_OK = re.compile(r"^(?:[a-zA-Z]\s*)+$")


def parse_answer(text: str) -> Node:
    """Parse one cleaned answer (see `normalize.clean_answer`) into a Node."""
    if not text:
        raise ParseError("empty answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise ParseError("answer too long to parse")
    stripped = text.strip()
    if _WORDS_ONLY.match(stripped) and any(len(w) > 1 for w in stripped.split()):
        words = stripped.lower().split()
        if not all(_FUNC_ALIASES.get(w, w) in _FUNCS | {"pi", "sqrt", "infty", "inf"} for w in words):
            return Text(" ".join(stripped.split()))
    return _Parser(_tokenize(text)).parse()
