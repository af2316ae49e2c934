"""Which free names of a label's test code come from the program, and which may not.

Label code (assert lines, MBPP setup, a HumanEval `check`, a prompt's helpers) runs in a judge
sandbox. A name it uses that neither it nor the builtins define would have to come from the
candidate's program, and a helper the candidate supplies is a helper the candidate controls:
a `poly` that returns 0 or an identity `encode_cyclic` wins HumanEval/32 and /38. So only the
functions under test (`entry_point`, `entry_points`) come from the program; stdlib modules a
test names without importing are imported for it; any other free name is a label error that
says to put the dataset's prompt code in `tests.helpers` (or to send the dataset's prompt as the
sample's prompt: prompt_helpers.py takes them from there). Found statically with `symtable`
(the code is compiled, never run, in this process).
"""

from __future__ import annotations

import builtins
import functools
import symtable
import sys
from dataclasses import dataclass


class LabelCodeError(ValueError):
    """The label's test code cannot be judged as it stands (says what to change)."""


@dataclass(frozen=True)
class TestNames:
    candidates: tuple[str, ...]  # functions of the program the test code may call
    modules: tuple[str, ...]  # stdlib modules used without an import


def _scan(table: symtable.SymbolTable, free: set[str], defined: set[str]) -> None:
    module_level = table.get_type() == "module"
    for symbol in table.get_symbols():
        name = symbol.get_name()
        if module_level:
            if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
                defined.add(name)
            elif symbol.is_referenced():
                free.add(name)
        elif symbol.is_global() and symbol.is_referenced():
            free.add(name)
        elif symbol.is_declared_global() and symbol.is_assigned():
            defined.add(name)
    for child in table.get_children():
        _scan(child, free, defined)


def _names(source: str, filename: str) -> tuple[set[str], set[str]]:
    free: set[str] = set()
    defined: set[str] = set()
    try:
        _scan(symtable.symtable(source, filename, "exec"), free, defined)
    except SyntaxError as exc:
        raise LabelCodeError(
            f"the label's {filename} does not compile: {exc.msg} (line {exc.lineno})"
        ) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise LabelCodeError(f"the label's {filename} cannot be compiled: {type(exc).__name__}") from None
    return free, defined


def _unknown(shared: tuple[tuple[str, str], ...], lines: tuple[str, ...]) -> set[str]:
    free: set[str] = set()
    defined: set[str] = set()
    for filename, source in shared:
        if source:
            more_free, more_defined = _names(source, filename)
            free |= more_free
            defined |= more_defined
    for line in lines:
        more_free, more_defined = _names(line, "assert line")
        free |= more_free - more_defined
    return {
        name
        for name in free - defined
        if not (name.startswith("__") and name.endswith("__")) and name not in builtins.__dict__
    }


def undefined_names(
    shared: tuple[tuple[str, str], ...], lines: tuple[str, ...], explicit: tuple[str, ...]
) -> frozenset[str]:
    """Names the test code uses that neither it, the builtins, the stdlib nor `explicit` supply."""
    unknown = _unknown(shared, lines) - set(explicit)
    return frozenset(name for name in unknown if name not in sys.stdlib_module_names)


@functools.lru_cache(maxsize=1024)
def test_names(
    shared: tuple[tuple[str, str], ...], lines: tuple[str, ...], explicit: tuple[str, ...]
) -> TestNames:
    """Names for code `shared` (helpers, setup, test: one namespace) and per-test `lines`.

    `explicit` are the program functions the label names; with none (an MBPP assert list
    without an entry point) the one undefined name the asserts call is taken as the function.
    """
    unknown = _unknown(shared, lines)
    wanted = [name for name in explicit if name]
    modules = sorted(name for name in unknown - set(wanted) if name in sys.stdlib_module_names)
    rest = sorted(unknown - set(wanted) - set(modules))
    if not wanted:
        if len(rest) > 1:
            raise LabelCodeError(
                f"the tests use {', '.join(rest[:8])} and the label names no entry_point: name the "
                "program's function in tests.entry_point and put the helpers the tests call (the "
                "dataset's prompt code) in tests.helpers"
            )
        return TestNames(tuple(rest), tuple(modules))
    if rest:
        raise LabelCodeError(
            f"the tests use {', '.join(rest[:8])}, which the label does not define: put the dataset's "
            "prompt code (the helpers the tests call) in tests.helpers, or list program functions "
            "the tests call in tests.entry_points; helpers are never taken from the program"
        )
    return TestNames(tuple(wanted), tuple(modules))
