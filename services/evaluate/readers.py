"""Rows of a local JSONL, JSON, CSV or Parquet file, each with a stable index for resuming.

The index counts rows in file order (blank JSONL lines are not rows), so a restarted run can
skip exactly the rows its output already holds. A row that cannot be read is still a row: it
carries the reason, and the runner writes it back as INVALID_INPUT rather than dropping it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal

Format = Literal["jsonl", "json", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("jsonl", "json", "csv", "parquet")
_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


class InputError(ValueError):
    """The file as a whole cannot be read (unknown format, not a list, missing pyarrow)."""


@dataclass(frozen=True, slots=True)
class InputRow:
    index: int  # 0-based position among the file's rows
    number: int  # 1-based line (JSONL) or row number, for messages a person can act on
    where: str  # "line 7" or "row 3"
    value: Any  # the parsed row (usually a dict); None when it could not be parsed
    error: str = ""  # why it could not be parsed
    raw: str = ""  # the unparsed text, when there is one


def detect_format(path: Path, declared: str | None = None) -> Format:
    if declared:
        if declared not in FORMATS:
            raise InputError(f"unknown format {declared!r}; use one of {', '.join(FORMATS)}")
        return declared
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"cannot tell the format of {path.name}; pass --format ({', '.join(FORMATS)})")
    return fmt


def read_rows(path: Path, fmt: Format, start: int = 0) -> Iterator[InputRow]:
    """Rows from index `start` on, in file order."""
    readers = {"jsonl": _jsonl, "json": _json, "csv": _csv, "parquet": _parquet}
    return islice(readers[fmt](path), start, None)


def count_rows(path: Path, fmt: Format) -> int:
    if fmt == "jsonl":
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    if fmt == "parquet":
        return int(_parquet_file(path).metadata.num_rows)
    return sum(1 for _ in read_rows(path, fmt))


def _jsonl(path: Path) -> Iterator[InputRow]:
    index = 0
    with path.open(encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                yield InputRow(index, number, where, json.loads(line))
            except ValueError as exc:
                yield InputRow(index, number, where, None, f"{where} is not JSON: {exc}", line[:1000])
            index += 1


def _json(path: Path) -> Iterator[InputRow]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path.name} is not JSON: {exc}") from exc
    if isinstance(data, dict):  # {"data": [...]} / {"rows": [...]}: the one list it holds
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise InputError(f"{path.name}: expected a list of rows or an object holding one list")
        data = lists[0]
    if not isinstance(data, list):
        raise InputError(f"{path.name}: expected a list of rows")
    for index, value in enumerate(data):
        yield InputRow(index, index + 1, f"row {index + 1}", value)


# Python's csv module refuses fields over 131,072 characters by default: long chain-of-thought
# responses exceed that. 256 MiB holds any real field while still stopping a file with a stray
# quote from swallowing the whole file into one field without bound.
CSV_FIELD_LIMIT = 256 * 1024 * 1024


def _csv(path: Path) -> Iterator[InputRow]:
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        index = 0
        while True:
            try:
                record = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # the reader cannot continue past a malformed record
                raise InputError(f"{path.name}: row {index + 1} is not valid CSV: {exc}") from exc
            yield InputRow(index, index + 1, f"row {index + 1}", dict(record))
            index += 1


def _parquet_file(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError("Parquet input needs pyarrow: pip install 'arbiter[eval]'") from exc
    return pq.ParquetFile(path)


def _parquet(path: Path) -> Iterator[InputRow]:
    index = 0
    for batch in _parquet_file(path).iter_batches(batch_size=4096):
        for value in batch.to_pylist():
            yield InputRow(index, index + 1, f"row {index + 1}", value)
            index += 1
