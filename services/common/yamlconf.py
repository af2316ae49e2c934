"""Name the line of a YAML file behind a validation error, so a bad config says where it is bad."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml
from pydantic import ValidationError


def line_of(node: yaml.Node, loc: Sequence[int | str]) -> int | None:
    """1-based line of the deepest node along `loc` (mapping keys / sequence indices)."""
    line: int | None = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def describe_errors(exc: ValidationError, path: str | Path | None) -> str:
    """One line per problem, prefixed with `file:line:` when the value came from the file."""
    root: yaml.Node | None = None
    if path is not None:
        try:
            root = yaml.compose(Path(path).read_text())
        except (OSError, yaml.YAMLError):
            root = None
    lines = []
    for error in exc.errors():
        loc = [p for p in error.get("loc", ()) if isinstance(p, int | str)]
        where = ".".join(str(p) for p in loc) or "(top level)"
        prefix = ""
        if root is not None:
            line = line_of(root, loc)
            prefix = f"{path}:{line}: " if line else f"{path}: "
        lines.append(f"{prefix}{where}: {error.get('msg')}")
    return "\n".join(lines)
