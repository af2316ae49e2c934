"""Which files the eval tools may write: never an input, never a file they did not create.

`arbiter score X -o X` used to truncate X before reading it, an existing JSONL that arbiter did
not write was silently emptied, and `-o` followed symlinks. Every command that writes files
(`score`, `compare`, `rm-eval`) checks its targets here first, before any work:

- a target that is a symbolic link, or not a regular file, is refused (write the real path);
- a target that is one of the inputs (same path, or the same file through a hard link) is refused;
- two targets that are the same file are refused (`--summary OUT.jsonl`);
- an existing, non-empty target must be recognisably this tool's own output (`owned(path)`),
  else it is refused even with `--overwrite`; whether an owned file may be replaced is the
  caller's rule (score resumes its output and rewrites its summary; rm-eval needs --overwrite).

Whole files (summaries, reports, comparisons) are then written atomically: a temporary file in
the same folder renamed over the target, so a crash never leaves half a file and a symlink
created after the check is replaced, not followed.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HEAD_BYTES = 1 << 16  # enough to recognise our own files by their first line or tag
_MAX_OWN_JSON = 64 << 20  # summaries and comparisons are far smaller


class UnsafeOutput(ValueError):
    """A target may not be written: it is an input, a link, or a file this tool did not create."""


@dataclass(frozen=True)
class Target:
    path: Path
    what: str  # "output", "summary", ... for the message
    owned: Callable[[Path], bool]  # is this existing file one the tool wrote?
    replace: bool = True  # may an owned file be replaced (False: refuse, suggest --overwrite)


def _same(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.abspath(a) == os.path.abspath(b) or a.resolve() == b.resolve()


def check_targets(targets: Sequence[Target], inputs: Sequence[Path], command: str) -> None:
    """Raise UnsafeOutput naming the first target that may not be written, and why."""
    for i, target in enumerate(targets):
        path = target.path
        for source in inputs:
            if _same(path, source):
                raise UnsafeOutput(f"the {target.what} {path} is the input {source}: choose another name")
        for other in targets[:i]:
            if _same(path, other.path):
                raise UnsafeOutput(f"the {target.what} and the {other.what} are the same file {path}")
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise UnsafeOutput(
                f"the {target.what} {path} is a symbolic link; {command} writes only files it creates: "
                "give the real path or another name"
            )
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeOutput(f"the {target.what} {path} exists and is not a regular file")
        if info.st_size == 0:
            continue  # nothing to lose
        if not target.owned(path):
            raise UnsafeOutput(
                f"the {target.what} {path} exists and was not written by {command}; "
                "it is left alone: choose another name or remove it yourself"
            )
        if not target.replace:
            raise UnsafeOutput(
                f"the {target.what} {path} exists (from an earlier {command}); pass --overwrite to replace it"
            )


def head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(_HEAD_BYTES)


def first_json_line(path: Path) -> Any:
    """The first line of a JSONL file, parsed (None when it is not complete JSON)."""
    line = head(path).split(b"\n", 1)[0]
    try:
        return json.loads(line)
    except ValueError:
        return None


def json_object_with(path: Path, keys: Sequence[str]) -> bool:
    """Whether `path` holds a JSON object with all of `keys` (how summaries are recognised)."""
    try:
        if path.stat().st_size > _MAX_OWN_JSON:  # ours are small: never parse a big foreign file
            return False
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and all(key in data for key in keys)


def html_titled(prefix: str) -> Callable[[Path], bool]:
    """Recognises the reports `report.page` writes: their <title> starts with `prefix`."""
    marker = f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{prefix}'.encode()
    return lambda path: head(path).startswith(marker)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a whole file through a temporary file renamed over `path` (never follows a link there)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent or Path("."), prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # as a plain open() would create it
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
