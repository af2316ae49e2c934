"""The persistent Python interpreter inside an episode's sandbox (stdlib only; never imported).

Run as `python3 -I -S -B -c <this source>` inside bubblewrap (interpreter.py). It speaks the
code sandbox's frame protocol (a 4-byte big-endian length, then a JSON object) on fds 0/1:
first `{"ready": true}`, then one reply per request:

  {"op": "exec", "code": str, "max_output": int, "quiet": bool}
      -> {"output": str, "error": bool, "truncated": bool, "output_bytes": int}
  {"op": "ping"} -> {"pong": true}

Cells run in one namespace, so variables survive between turns. A cell's last expression is
echoed (as a notebook does). What a cell writes, through `print` or straight to fds 1 and 2 (a
child process, `os.write`), is collected in order up to `max_output` characters; the rest is
counted, not kept. The protocol moves to private fds at start-up, so a cell's own writes to fd 1
never land in a reply. A cell can still reach the protocol fds (it runs in this process): it can
only lie to its own episode, which is sandboxed alone; limits are enforced from outside.
"""

import ast
import json
import linecache
import os
import struct
import sys
import traceback
from typing import Any

HEADER = struct.Struct(">I")


def _setup() -> tuple[int, int]:
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    capture = os.open(".repl-output", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(".repl-output")
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    os.close(capture)
    return proto_in, proto_out


def _read_exact(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int) -> dict[str, Any]:
    (size,) = HEADER.unpack(_read_exact(fd, HEADER.size))
    message = json.loads(_read_exact(fd, size))
    return message if isinstance(message, dict) else {}


def _send(fd: int, message: dict[str, Any]) -> None:
    body = json.dumps(message, ensure_ascii=True).encode()
    data = HEADER.pack(len(body)) + body
    while data:
        data = data[os.write(fd, data) :]


class Capped:
    """sys.stdout and sys.stderr during a cell: writes go to fd 1 (the capture file, in order
    with what child processes write there) until `limit` characters; the rest is only counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = 0
        self.total = 0

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        self.total += len(text)
        room = self.limit - self.kept
        if room > 0:
            piece = text[:room]
            self.kept += len(piece)
            data = piece.encode("utf-8", "replace")
            while data:
                data = data[os.write(1, data) :]
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"


def _fd_output(limit: int) -> tuple[str, int]:
    """What went to fds 1/2 during the cell (prints, child processes, os.write): the first
    `limit` characters and the byte count; the capture file is emptied for the next cell."""
    size = os.lseek(1, 0, os.SEEK_END)
    os.lseek(1, 0, os.SEEK_SET)
    data = os.read(1, max(limit * 4, 0) + 4) if size else b""
    os.ftruncate(1, 0)
    os.lseek(1, 0, os.SEEK_SET)
    return data.decode("utf-8", "replace")[:limit], size


def _run(code: str, namespace: dict[str, Any], stream: Capped) -> bool:
    """Runs one cell; True when it raised. The last expression statement is echoed."""
    linecache.cache["<cell>"] = (len(code), None, code.splitlines(True), "<cell>")
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = None
        final = tree.body[-1] if tree.body else None
        if isinstance(final, ast.Expr):
            tree.body.pop()
            last = ast.Expression(final.value)
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), namespace)
            if value is not None:
                stream.write(repr(value) + "\n")
        return False
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the interpreter stays
        error = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        error.stack = traceback.StackSummary.from_list([f for f in error.stack if f.filename == "<cell>"])
        stream.write("".join(error.format()))
        return True


def main() -> None:
    proto_in, proto_out = _setup()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    _send(proto_out, {"ready": True})
    while True:
        try:
            request = _receive(proto_in)
        except EOFError:
            return
        op = request.get("op")
        if op == "ping":
            _send(proto_out, {"pong": True})
            continue
        if op != "exec":
            _send(proto_out, {"error": True, "output": "unknown op", "truncated": False, "output_bytes": 0})
            continue
        limit = int(request.get("max_output", 4096))
        stream = Capped(limit)
        sys.stdout = sys.stderr = stream
        try:
            try:
                failed = _run(str(request.get("code", "")), namespace, stream)
            except OSError:  # the capture file is full (the sandbox's file size limit)
                failed = True
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        for original in (sys.__stdout__, sys.__stderr__):
            try:
                if original is not None:
                    original.flush()
            except Exception:
                pass
        try:
            text, written = _fd_output(limit)
        except OSError:
            text, written = "", 0
        total = max(written, stream.total)
        _send(
            proto_out,
            {"output": text, "error": failed, "truncated": total > len(text), "output_bytes": total},
        )


if __name__ == "__main__":
    main()
