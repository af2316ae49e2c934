"""Append-only JSONL output that survives SIGKILL: complete lines are kept, a torn tail is cut.

Rows are written strictly in input order, so the number of complete lines is the number of
input rows done; a restart truncates any partial last line and appends from there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from services.evaluate.strict_json import dumps, dumps_plain


def completed_rows(path: Path) -> int:
    """Complete lines in `path` after cutting a torn last line (0 when there is no file)."""
    if not path.exists():
        return 0
    with path.open("r+b") as handle:
        count = 0
        keep = 0
        offset = 0
        for line in handle:
            offset += len(line)
            if line.endswith(b"\n"):
                count += 1
                keep = offset
        if keep != offset:
            handle.truncate(keep)
    return count


def encode(record: dict[str, Any]) -> bytes:
    """One strict-JSON line (NaN / Infinity from the input are written as strings)."""
    return (dumps(record) + "\n").encode("utf-8", "surrogateescape")


def encode_plain(record: dict[str, Any]) -> tuple[bytes, bool]:
    """`encode(record)`, and whether reading the line back gives the record's values (dumps_plain)."""
    text, plain = dumps_plain(record)
    return (text + "\n").encode("utf-8", "surrogateescape"), plain


class AppendWriter:
    """Writes whole batches of lines with one write call, flushed to the OS at once."""

    def __init__(self, path: Path, fresh: bool, durable: bool = False) -> None:
        self.durable = durable  # fsync each batch: survives power loss too, not just a killed process
        # O_NOFOLLOW: a symlink put at the output's name is refused, never written through.
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | (os.O_TRUNC if fresh else 0)
        self._fd = os.open(path, flags, 0o644)

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        self.write_lines([encode(r) for r in records])

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """Encoded lines (`encode`), with one write call."""
        view = memoryview(b"".join(lines))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if self.durable:
            os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> AppendWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
