"""`/run_code`'s `files` and `fetch_files`: which paths a request may name, and how much it may move.

SandboxFusion writes `files` ({path: base64}) beside the program before the run and sends back the
`fetch_files` it finds after it, base64, in the response's `files`; a `null` content is skipped.
Here every path is confined to the run's work dir (`/tmp` in the sandbox, the program's working
directory): relative or under `/tmp/`, no `..`, no empty or `.` steps other than a leading `./`,
not the harness's own files; and inside the sandbox each step is opened without
following a symlink (harness.upload_files / fetch_files), so a program that made `out -> /proc/self`
or `d -> /` fetches nothing through it. Counts and sizes are bounded (config: run_code_max_files,
run_code_files_mb); a fetched file past what is left of the bound is left out and named in the
response's `message`, a missing one is left out (as SandboxFusion does).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

_HARNESS_FILES = frozenset({".stdin", ".prog"})  # harness.STDIN_NAME, BINARY_NAME
WORK_DIR = "/tmp/"  # the run's directory in the sandbox: `/tmp/a.txt` is `a.txt`
MAX_PATH_BYTES = 1024
MAX_DEPTH = 16


class FilesRefused(ValueError):
    """A request's files or fetch_files that this sandbox will not take (the route answers 422)."""


def confined_path(path: str) -> str:
    """`path` as a plain relative path below the work dir (a leading `./`, or `/tmp/`, the work
    dir's own absolute path in the sandbox, dropped); FilesRefused for any other absolute path, a
    `..` or empty step, a NUL, the harness's own files or an overlong one."""
    plain = path[len(WORK_DIR) :] if path.startswith(WORK_DIR) else path
    if not plain or "\0" in plain or plain.startswith("/"):
        raise FilesRefused(f"file path {path[:100]!r}: not a path in the run's directory")
    while plain.startswith("./"):
        plain = plain[2:]
    parts = plain.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise FilesRefused(f"file path {path[:100]!r}: '..', '.' and empty steps are not allowed")
    try:
        size = len(plain.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # a lone surrogate that JSON's \ud800 escapes let in: no file name
        raise FilesRefused(f"file path {path[:100]!r}: not a file name") from None
    if size > MAX_PATH_BYTES or len(parts) > MAX_DEPTH:
        raise FilesRefused(f"file path {path[:100]!r}: too long or too deep")
    if plain in _HARNESS_FILES:
        raise FilesRefused(f"file path {path!r} is reserved by the sandbox")
    return plain


def upload_plan(files: dict[str, str | None], max_files: int, max_bytes: int) -> dict[str, str]:
    """The files to write ({confined path: base64}), `null` ones skipped; FilesRefused past the
    bounds or for content that is not base64."""
    kept = {name: data for name, data in files.items() if data is not None}
    if len(kept) > max_files:
        raise FilesRefused(f"{len(kept)} files; at most {max_files} per request")
    plan: dict[str, str] = {}
    total = 0
    for name, data in kept.items():
        path = confined_path(name)
        if path in plan:
            raise FilesRefused(f"file path {name!r} names a file twice")
        try:
            total += len(base64.b64decode(data, validate=True))
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise FilesRefused(f"file {name!r}: content is not base64") from None
        if total > max_bytes:
            raise FilesRefused(f"files over {max_bytes >> 20} MB in all")
        plan[path] = data
    if any(other.startswith(path + "/") for path in plan for other in plan):
        raise FilesRefused("a file path is also used as a directory")
    return plan


def fetch_plan(names: Iterable[str], max_files: int) -> dict[str, str]:
    """{requested name: confined path} for `fetch_files` (duplicates once); FilesRefused past the
    count or for a path out of the run's directory."""
    plan: dict[str, str] = {}
    for name in names:
        plan.setdefault(name, confined_path(name))
    if len(plan) > max_files:
        raise FilesRefused(f"{len(plan)} fetch_files; at most {max_files} per request")
    return plan
