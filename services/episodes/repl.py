"""The persistent Python interpreter inside an episode's sandbox (stdlib only; never imported).

Run as `python3 -I -S -B -c <this source> [harness path]` inside bubblewrap (interpreter.py). It
speaks the code sandbox's frame protocol (a 4-byte big-endian length, then a JSON object) on fds
0/1: first `{"ready": true}`, then one reply per request:

  {"op": "exec", "code": str, "max_output": int, "quiet": bool}
      -> {"output": str, "error": bool, "truncated": bool, "output_bytes": int}
  {"op": "ping"} -> {"pong": true}

Cells run in one namespace, so variables survive between turns. A cell's last expression is
echoed (as a notebook does). What a cell writes, through `print` or straight to fds 1 and 2 (a
child process, `os.write`), is collected in order up to `max_output` characters; the rest is
counted, not kept. The protocol moves to private fds at start-up, so a cell's own writes to fd 1
never land in a reply. A cell can still reach the protocol fds (it runs in this process): it can
only lie to its own episode, which is sandboxed alone; limits are enforced from outside.

A sandbox that serves one episode after another (reuse.py, as `/run_code`'s do) runs this process
as a *zygote* that never runs a cell: {"op": "seal"} makes it undumpable and notes what another
process of its uid could change about it; {"op": "sample"} forks the episode's interpreter (the
worker), which serves the episode's cells until {"op": "reset"} or {"op": "end"}; then the zygote
kills every other process of the sandbox, empties /tmp, checks its own attributes, and answers
`{"ended": true}`; {"op": "ping", "nonce"} -> {"pong": nonce, "clean": bool}. Those clean-up
steps are the code harness's own (its bytecode, bound read-only at the path given as argument,
loaded on the first seal). An interpreter that dies mid-episode (`os._exit`, a memory kill) leaves
the zygote answering `{"ended": true}` in its place: a reply without "output", which the trusted
side takes as the interpreter's end.
"""

import _signal  # type: ignore[import-not-found]  # `signal` would import enum: start-up time
import ast
import json
import linecache
import os
import struct
import sys
import traceback
from typing import Any

HEADER = struct.Struct(">I")
CONTROL_OPS = ("seal", "sample", "reset", "end", "ping")  # what a zygote reads: no episode's data


def _protocol_fds() -> tuple[int, int]:
    """The protocol on private fds (close-on-exec: a cell's child processes never hold them);
    fd 0 reads /dev/null and fd 1 goes to fd 2 (the drained stderr pipe) until a capture."""
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return proto_in, proto_out


def _capture() -> None:
    """fds 1 and 2 write to an unlinked file of the work dir, read back after each cell."""
    capture = os.open(".repl-output", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(".repl-output")
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    os.close(capture)


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


def _cell(request: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
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
    return {"output": text, "error": failed, "truncated": total > len(text), "output_bytes": total}


def _serve(proto_in: int, proto_out: int, request: dict[str, Any] | None, worker: bool) -> None:
    """Serves one episode's cells until EOF or, in a zygote's worker, the episode's end."""
    _capture()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        if request is None:
            try:
                request = _receive(proto_in)
            except EOFError:
                return
        op = request.get("op")
        if worker and op in ("reset", "end"):
            return
        if op == "ping":
            _send(proto_out, {"pong": True})
        elif op == "exec":
            _send(proto_out, _cell(request, namespace))
        else:
            _send(proto_out, {"error": True, "output": "unknown op", "truncated": False, "output_bytes": 0})
        request = None


class Zygote:
    """The sandbox's first process when it serves episode after episode: it forks each episode's
    interpreter and cleans up after it, with the code harness's own clean-up (module docstring)."""

    def __init__(self, proto_in: int, proto_out: int, harness_path: str) -> None:
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.harness_path = harness_path
        self.harness: dict[str, Any] = {}
        self.sealed: Any = None
        self.undumpable = False
        self.forked = False
        self.clean = os.environ.get("ARBITER_SANDBOX") == "bwrap"  # kill(-1) only in its own pid namespace

    def seal(self) -> dict[str, Any]:
        """Undumpable (an episode's processes, its uid, cannot open its /proc/pid/mem or fds;
        ptrace is refused by the seccomp filter); what they could still change on it, noted."""
        if self.sealed is None:
            try:
                import marshal

                with open(self.harness_path, "rb") as handle:
                    code = marshal.loads(handle.read())
                harness: dict[str, Any] = {"__name__": "arbiter_harness", "__builtins__": __builtins__}
                exec(code, harness)
                work = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
                harness["_WORK_DIR"].extend((work, os.fstat(work).st_mode & 0o7777))
                harness["_oom_adjust"](None)  # its fd opened while it can be, closed in workers
                self.undumpable = harness["_undumpable"]()
                self.sealed = harness["_attributes"]()
                self.harness = harness
                _signal.signal(_signal.SIGINT, _signal.SIG_DFL)  # an interrupt from a worker ends it
            except Exception:
                self.clean = False
                return {"ok": False, "sealed": False}
        return {"ok": True, "sealed": self.undumpable}

    def sample(self) -> dict[str, Any]:
        """Forks one episode's interpreter, waits for its end, and leaves the sandbox as sealed:
        every other process killed, the work dir emptied (its mode and ACLs as they were), this
        process's nice value, scheduling, CPUs and rlimits unchanged, or it says it is unclean."""
        if self.sealed is None and not self.seal().get("ok"):
            return {"ended": True}
        harness = self.harness
        self.forked = True
        pid = os.fork()
        if pid == 0:
            _work(harness, self.proto_in, self.proto_out)
        status = -1
        try:  # noqa: SIM105 - contextlib would cost start-up time
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        harness["_kill_others"](pid)
        harness["_reap"]()
        wiped = harness["_wipe"](".")
        self.clean = self.clean and status == 0 and wiped and harness["_attributes"]() == self.sealed
        return {"ended": True}

    def pong(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"pong": request.get("nonce", True), "clean": self.clean and self.undumpable}


def _work(harness: dict[str, Any], proto_in: int, proto_out: int) -> None:
    """An episode's interpreter, forked from the zygote: the zygote's own fds closed (a write to
    its oom_score_adj fd would set the zygote's), first in line for the memory killer."""
    code = 3
    try:
        for held in (harness["_OOM_ADJ"], harness["_WORK_DIR"]):
            if held:
                os.close(held[0])
                del held[:]
        harness["_dumpable_again"]()  # else its /proc files are root's: the write below fails
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        _serve(proto_in, proto_out, None, worker=True)
        code = 0
    finally:
        os._exit(code)


def main() -> None:
    proto_in, proto_out = _protocol_fds()
    zygote = Zygote(proto_in, proto_out, sys.argv[1] if len(sys.argv) > 1 else "")
    _send(proto_out, {"ready": True})
    while True:
        try:
            request = _receive(proto_in)
        except EOFError:
            return
        op = request.get("op")
        if op not in CONTROL_OPS and not zygote.forked:
            _serve(proto_in, proto_out, request, worker=False)  # one episode, in this process
            return
        if op == "seal":
            reply = zygote.seal()
        elif op == "sample":
            reply = zygote.sample()
        elif op == "ping":
            reply = zygote.pong(request)
        elif op in ("reset", "end"):
            reply = {"ended": True}  # its interpreter had ended already (and was cleaned up after)
        else:
            zygote.clean = False  # an episode's data sent to the zygote: never forked again
            reply = {"error": True}
        _send(proto_out, reply)


if __name__ == "__main__":
    main()
