"""What runs inside the sandbox: loads the candidate, calls it, runs it on stdin, answers in frames.

This file's bytecode is loaded by the sandbox's interpreter from a read-only file bound into the
sandbox (runner.py), so it is stdlib-only and keeps to Python 3.8 syntax. It is also imported by
the trusted process for its value codec, which is the one place where values cross the boundary:
only builtin types (None, bool, int, float, str, bytes, complex, list, tuple, set, frozenset,
dict) travel, tagged so that a tuple comes back a tuple. Nothing here is trusted: the candidate
shares this process (function tests) and can rewrite any reply; the trusted process never sends
expected values in, so a forged reply can only report what the candidate could have returned
anyway.

Protocol: frames of a 4-byte big-endian length and a JSON object, on fd 0 (requests) and
fd 1 (replies); the harness moves the candidate's own stdout to fd 2, which the trusted
process drains. Requests: {"op": "load", "source", "module", "prelude"}, {"op": "call", "name",
"args", "kwargs"}, {"op": "stdio", "source", "input", "time_limit_s", "wall_limit_s",
"max_output_bytes"}, and {"op": "stdio_batch", "source" | "binary", "inputs", "max_output_bytes",
"time_limit_s", "wall_limit_s", "budget_s", "max_timeouts"}: a sample's stdio tests in one request,
each run in a fresh child, answered by one frame per input as each finishes (`{"skipped": "budget"
| "timeouts" | "dirty"}` for one not run).

A reused sandbox serves each sample from a fork: {"op": "sample"} has this process (from then on
a *zygote* that reads only control frames: sample, seal, reset, end, ping) fork a worker that
reads and serves the sample's requests and exits at its "reset" or "end"; the zygote then cleans
up and answers {"ended": true} (fork_sample). No request's data ever reaches the zygote's memory,
which every later worker, and every Python run forked from one, starts from.

A run's time limit is CPU time where the sandbox has a cpuacct cgroup (its `cpuacct.usage`,
bound read-only into the sandbox, named by ARBITER_CPU_USAGE): the CPU every process of the
sandbox used from the run's start to its end, its forks, daemons and unreaped children included,
so a run slowed by other samples is not timed out for their CPU use; a run also has a wall-clock
limit (`wall_limit_s`, longer), which catches one that sleeps or blocks. Without cpuacct the
time limit is wall-clock, as `wall_limit_s` is then ignored.

The same file serves the other side of a function test, in a second sandbox that never holds the
candidate: the *judge*. {"op": "judge", "helpers", "setup", "test", "candidates", "modules"},
sent to a sample's worker, runs the label's code there (a HumanEval prompt's helpers, MBPP
setup, a `check` function); {"op": "run", "code" | "check"} runs one test. Whenever that test
calls one of the `candidates` names, the judge writes {"op": "call", ...} and reads the
candidate's reply, which the trusted process relays unread between the two sandboxes; the test's
verdict comes last as {"done": true, "passed", "reason", "message"}. So label code (from the
request, like the program) runs sandboxed, and the candidate still shares no process with the
comparisons.
"""

from __future__ import annotations

# Only C modules at start-up: `json` would pull in `re` and `signal` would pull in `enum`,
# milliseconds of every sandbox's start.
import _json
import _signal  # type: ignore[import-not-found]
import binascii
import builtins
import math
import os
import select
import struct
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

MAX_DEPTH = 64
STDIN_NAME = ".stdin"  # in the work dir: /tmp, a fresh tmpfs, in the sandbox
SOURCE_NAME = "main.cpp"
BINARY_NAME = ".prog"
_NO_PROGRAM: dict[str, Any] = {"ok": False, "error": {"type": "ProtocolError", "message": "no program"}}
_MFD_EXEC = 0x10  # memfd_create: executable even where vm.memfd_noexec defaults to no-exec
_HEADER = struct.Struct(">I")
# Bound now, before any program or label code runs: what they may rebind (os._exit, print...)
# never changes how a harness process ends or reports.
_EXIT = os._exit
_STDERR = os.write
# What a zygote (a harness that forked a sample's worker) reads itself: no sample's data.
_CONTROL_OPS = ("sample", "seal", "reset", "end", "ping")
_HARNESS = globals()


class CodecError(ValueError):
    """A value that cannot cross the boundary (depth, type or shape)."""


# ---------------------------------------------------------------- JSON without `re`


class _DecodeContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.__getitem__
    memo: ClassVar[dict[str, Any]] = {}


_scan = _json.make_scanner(_DecodeContext())  # type: ignore[arg-type]
_NO_DEFAULT: Any = None  # make_encoder(markers, default, encoder, indent, separators, sort, skip, nan)
_encode = _json.make_encoder(
    None, _NO_DEFAULT, _json.encode_basestring_ascii, None, ":", ",", False, False, False
)


def dumps(value: Any) -> str:
    """Compact ASCII JSON (no NaN: the codec tags non-finite floats)."""
    return "".join(_encode(value, 0))


def loads(text: str) -> Any:
    value, end = _scan(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after JSON value")
    return value


def b64encode(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def b64decode(text: str) -> bytes:
    return binascii.a2b_base64(text)


def checker_passed(verdict: Any, threshold: Any) -> bool:
    """What a custom checker's return value means (docs/graders/code.md): True passes; a real
    number (int, float or a subclass, numpy's scalars) passes when it is finite and at least
    `threshold` (1 unless the label sets `checker_threshold`); anything else fails: False, None,
    NaN, -1e9, a string, a container, an object whose truth or comparison it defines itself."""
    if verdict is True:
        return True
    try:
        if type(verdict).__module__ == "numpy" and type(verdict).__name__ != "ndarray":
            verdict = verdict.item()  # a numpy scalar (numpy.allclose's bool_, an int64) as its builtin
            if verdict is True:
                return True
        if isinstance(verdict, bool) or not isinstance(verdict, (int, float)):
            return False
        limit = float(threshold)
        if isinstance(verdict, int):
            value = int.__index__(verdict)  # exact, whatever the size; never the subclass's __ge__
            return math.isfinite(limit) and value >= limit
        number = float.__float__(verdict)
    except Exception:  # a numpy look-alike's item(), a threshold that is no number
        return False
    return math.isfinite(number) and math.isfinite(limit) and number >= limit


# ---------------------------------------------------------------- value codec (both sides)


def encode_value(value: Any, depth: int = 0) -> Any:
    """A builtin-typed value as tagged JSON; subclasses become their base type's plain value.

    Base-type methods (e.g. `int.__index__`, `list.__getitem__`) read the raw value, so an
    override of `__eq__`, `__iter__` or `__int__` on a subclass changes nothing.
    """
    if depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if abs(value) < 1 << 53 else {"I": format(value, "x")}
    if kind is float:
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, bool):  # unreachable (bool cannot be subclassed); keeps the order honest
        return bool(value)
    if isinstance(value, int):
        return encode_value(int.__index__(value), depth)
    if isinstance(value, float):
        return encode_value(float.__float__(value), depth)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return {"B": b64encode(bytes(memoryview(value)))}
    if isinstance(value, complex):
        return {"C": [encode_value(complex.__complex__(value).real), encode_value(value.imag)]}
    if isinstance(value, list):
        return {"L": [encode_value(item, depth + 1) for item in list.__getitem__(value, slice(None))]}
    if isinstance(value, tuple):
        return {"T": [encode_value(item, depth + 1) for item in tuple.__getitem__(value, slice(None))]}
    if isinstance(value, frozenset):
        return {"F": [encode_value(item, depth + 1) for item in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"S": [encode_value(item, depth + 1) for item in set.__iter__(value)]}
    if isinstance(value, dict):
        pairs = dict.items(value)
        return {"D": [[encode_value(k, depth + 1), encode_value(v, depth + 1)] for k, v in pairs]}
    ratio = _exact_ratio(value)
    if ratio is not None:
        return {"Q": [encode_value(ratio[0]), encode_value(ratio[1])]}
    if kind is range or (hasattr(kind, "__next__") and hasattr(kind, "__iter__")):
        return {"L": [encode_value(item, depth + 1) for item in _bounded(value)]}
    return {"X": type(value).__name__}


MAX_ITEMS = 1 << 20  # items read from an iterator a candidate returns (map(), a generator...)


def _bounded(iterable: Any) -> list[Any]:
    """The items of a returned iterator (a correct `map()` answer is its items), up to MAX_ITEMS."""
    items = []
    for item in iterable:
        items.append(item)
        if len(items) > MAX_ITEMS:
            raise CodecError("iterator too long")
    return items


def _exact_ratio(value: Any) -> Any:
    """(numerator, denominator) of a Fraction or finite Decimal, so it compares as a number."""
    module = type(value).__module__
    if module not in ("fractions", "decimal", "_decimal", "_pydecimal"):
        return None
    if type(value).__name__ not in ("Fraction", "Decimal"):
        return None
    try:
        numerator, denominator = value.as_integer_ratio()
    except (ValueError, OverflowError, ArithmeticError):
        return None  # NaN or infinite Decimal: an opaque value
    return int.__index__(numerator), int.__index__(denominator)


class Opaque:
    """A value the sandbox could not express in builtin types; equal to nothing but itself."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<unserializable {self.type_name}>"


# Candidate exceptions that test code may catch by type. Deliberately not StopIteration and
# friends: raised into a `map()` inside an `all()`, they would end the iteration early and
# make the check pass.
MAPPED_EXCEPTIONS = {
    cls.__name__: cls
    for cls in (
        ArithmeticError,
        AssertionError,
        AttributeError,
        IndexError,
        KeyError,
        LookupError,
        NotImplementedError,
        OverflowError,
        RecursionError,
        RuntimeError,
        TypeError,
        ValueError,
        ZeroDivisionError,
    )
}


class CandidateError(Exception):
    """An exception the candidate raised that has no safe builtin twin."""


def candidate_exception(error: Any) -> Exception:
    """A fresh exception standing for the one the candidate raised (its type if it is a builtin)."""
    name = str(error.get("type", "Exception")) if isinstance(error, dict) else "Exception"
    message = str(error.get("message", "")) if isinstance(error, dict) else ""
    cls = MAPPED_EXCEPTIONS.get(name)
    if cls is not None:
        return cls(message)
    return CandidateError(name + ": " + message if message else name)


def decode_value(data: Any, depth: int = 0) -> Any:
    """Tagged JSON back to builtin values; anything malformed raises CodecError."""
    if depth > MAX_DEPTH + 1:
        raise CodecError("value nested too deeply")
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is float or kind is str:
        return data
    if kind is not dict or len(data) != 1:
        raise CodecError(f"malformed value of type {kind.__name__}")
    ((tag, body),) = data.items()
    if tag == "I" and type(body) is str:
        return int(body, 16)
    if tag == "f" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "B" and type(body) is str:
        try:
            return b64decode(body)
        except binascii.Error as exc:
            raise CodecError(f"malformed bytes: {exc}") from None
    if tag == "X" and type(body) is str:
        return Opaque(body[:200])
    if type(body) is not list:
        raise CodecError(f"malformed value tagged {tag!r}")
    if tag == "Q" and len(body) == 2 and type(body[0]) in (int, dict) and type(body[1]) in (int, dict):
        numerator, denominator = (decode_value(part, depth + 1) for part in body)
        if type(numerator) is not int or type(denominator) is not int or denominator <= 0:
            raise CodecError("malformed fraction")
        from fractions import Fraction  # only a judge or the trusted process ever needs it

        return Fraction(numerator, denominator)
    if tag == "C" and len(body) == 2:
        real, imag = (decode_value(part, depth + 1) for part in body)
        if type(real) is not float and type(real) is not int:
            raise CodecError("malformed complex")
        if type(imag) is not float and type(imag) is not int:
            raise CodecError("malformed complex")
        return complex(real, imag)
    items = [decode_value(item, depth + 1) for item in body] if tag != "D" else None
    try:
        if tag == "L":
            return items
        if tag == "T":
            return tuple(items or ())
        if tag == "S":
            return set(items or ())
        if tag == "F":
            return frozenset(items or ())
        if tag == "D":
            pairs = []
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise CodecError("malformed dict item")
                pairs.append((decode_value(pair[0], depth + 1), decode_value(pair[1], depth + 1)))
            return dict(pairs)
    except TypeError as exc:  # an unhashable set member or dict key
        raise CodecError(str(exc)) from None
    raise CodecError(f"unknown tag {tag!r}")


# ---------------------------------------------------------------- framing


def _read_exact(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any:
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return loads(_read_exact(fd, size).decode("utf-8"))


def write_frame(fd: int, message: Any) -> None:
    body = dumps(message).encode()
    view = memoryview(_HEADER.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


# ---------------------------------------------------------------- candidate execution


def _protocol_error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"type": "ProtocolError", "message": message}}


def _describe(exc: BaseException) -> dict[str, str]:
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable>"
    return {"type": type(exc).__name__, "message": message[:2000]}


class Harness:
    def __init__(self, ctl_in: int, ctl_out: int) -> None:
        self.ctl_in = ctl_in
        self.ctl_out = ctl_out
        self.namespace: dict[str, Any] = {}
        self.compiled: Any = None
        self.zygote = False  # it forked a sample's worker: it serves only control ops from then on
        self.worker = False  # a sample's worker (forked from the zygote): serves that sample only
        self.clean = True
        self.undumpable = False
        self.sealed: Any = None  # what another process could change about this one, as sealed
        self.program: Any = None  # the compiled program: a sealed memfd (int), or its bytes (fallback)

    def serve(self) -> None:
        write_frame(self.ctl_out, {"ok": True, "ready": True})
        self._serve()

    def _serve(self) -> None:
        """Answers requests until EOF (or, in a sample's worker, until the sample's end)."""
        while True:
            try:
                request = read_frame(self.ctl_in)
            except EOFError:
                return
            op = request.get("op")
            if op in ("reset", "end") and self.worker:
                return  # the sample is over: the worker exits; its zygote cleans up and answers
            if self.zygote and op not in _CONTROL_OPS:
                self.clean = False  # a sample's data in the zygote itself: never forked again
                write_frame(self.ctl_out, _protocol_error(f"op {op!r} outside a sample"))
                continue
            if op == "sample":
                reply = self.fork_sample() if not self.worker else _protocol_error("a sample in a sample")
            elif op == "load":
                reply = self.load(
                    request["source"], request.get("module", "__solution__"), request.get("prelude")
                )
            elif op == "call":
                reply = self.call(request["name"], request.get("args", {"L": []}), request.get("kwargs"))
            elif op == "stdio":
                reply = self.stdio(request)
            elif op == "stdio_batch":
                self.stdio_batch(request)
                continue  # it wrote its own frames
            elif op == "judge":
                if not self.worker:  # label code never runs in a process that outlives its sample
                    reply = _protocol_error("judge outside a sample")
                else:
                    _judge_child(self.ctl_in, self.ctl_out, request)  # never returns
            elif op == "ping":
                reply = self.pong(request)
            elif op == "compile":
                reply = self.compile_native(request)
            elif op == "binary":
                reply = self.put_binary(request)
            elif op == "upload":
                reply = upload_files(request.get("files"))
            elif op == "fetch":
                reply = fetch_files(request.get("names"), int(request.get("max_bytes", 0)))
            elif op == "seal":
                reply = self.seal()
            elif op in ("reset", "end"):
                reply = self.reset()
            else:
                reply = {"ok": False, "error": {"type": "ProtocolError", "message": f"unknown op {op!r}"}}
            write_frame(self.ctl_out, reply)

    def fork_sample(self) -> dict[str, Any]:
        """Serves one sample in a forked worker; then leaves the sandbox as it was for the next one.

        This process (the zygote) reads only control frames (`_CONTROL_OPS`), never a sample's
        data: the worker reads the sample's requests (its program, inputs, files, label code),
        runs them (a Python run is a fork of the worker, so it inherits only its own sample's
        data and the zygote's, which holds nothing of any request), and exits at the sample's
        `reset` or `end`. Then every other process of the sandbox is killed, the work dir
        emptied, and this process checks that nothing changed it (its nice value, scheduling,
        CPUs, rlimits, noted before its first worker); the worker's exit status says whether its
        runs left it untouched. It answers `{"ended": true}` (a run could write that too: the
        trusted side only believes a pong, proven_clean).
        """
        if not self.zygote:
            _preimport()  # loaded once, shared by every worker (test code's usual imports)
            if not self.undumpable:
                _oom_adjust(None)  # its fd opened while it can be (spawned runs take 1000 from it)
                self.undumpable = _undumpable()
            if self.sealed is None:
                self.sealed = _attributes()
            if not _SEALED:
                _SEALED.append(True)
            self.zygote = True
        pid = os.fork()
        if pid == 0:
            self._work()
        status = -1
        try:  # noqa: SIM105 - contextlib would cost start-up time
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        _kill_others(pid)
        _reap()
        wiped = _wipe(".")
        self.clean = self.clean and status == 0 and wiped and _attributes() == self.sealed
        return {"ended": True}

    def _work(self) -> None:
        """The worker's life: its own oom_score_adj fd, undumpable again, the sample's requests;
        exit status 0 only if no run tampered with it and its work dir could always be emptied."""
        code = 3
        try:
            self.worker, self.zygote = True, False
            _SPARED.append(os.getppid())
            _dumpable_again()  # its /proc files are root's while undumpable: its own oom fd first
            if _OOM_ADJ:
                os.close(_OOM_ADJ[0])  # the zygote's file: a write there would set the zygote's
                del _OOM_ADJ[:]
            _oom_adjust(None)
            self.undumpable = _undumpable()
            self.clean = self.undumpable
            self._serve()
            code = 0 if self.clean else 3
        finally:
            _EXIT(code)

    def seal(self) -> dict[str, Any]:
        """Before a reusable sandbox's first program: this process becomes undumpable (its runs'
        processes, same uid, cannot open its /proc/pid/mem or fds) and notes what they could still
        change about it (nice, scheduling, affinity, rlimits), for `reset` to compare."""
        if not self.zygote and self.sealed is None:
            _oom_adjust(None)  # its fd opened while it can be: spawned runs take 1000 from it
            self.undumpable = _undumpable()
            self.sealed = _attributes()
            _SEALED.append(True)
        return {"ok": True, "sealed": self.undumpable}

    def reset(self) -> dict[str, Any]:
        """Ends a sample of stdio runs: every other process killed, the work dir emptied, nothing
        of the program kept; clean only if this process is as sealed. Never in a process that ran
        candidate code itself (load/call): the trusted side resets only stdio-only sandboxes."""
        if os.environ.get("ARBITER_SANDBOX") != "bwrap" or self.sealed is None:
            self.clean = False
            return {"reset": False}
        _kill_others(0)
        _reap()
        self.compiled = None
        self.namespace = {}
        self._forget_program()
        wiped = _wipe(".")
        self.clean = self.clean and wiped and _attributes() == self.sealed
        return {"reset": True}

    def pong(self, request: dict[str, Any]) -> dict[str, Any]:
        """Proof that this process answers: the nonce of a ping sent once only it was left."""
        return {"pong": request.get("nonce"), "clean": self.clean and self.undumpable}

    def load(self, source: str, module: str, prelude: Any = None) -> dict[str, Any]:
        """Runs the program; after the label's helpers (`prelude`), which it may call (or redefine)."""
        self.namespace = {"__name__": module, "__builtins__": builtins, "__file__": "solution.py"}
        try:
            if prelude:
                try:  # noqa: SIM105 - contextlib would cost start-up time
                    exec(compile(prelude, "helpers.py", "exec"), self.namespace)
                except BaseException:
                    pass  # the judge reports the label's own errors; the program still runs
            exec(compile(source, "solution.py", "exec"), self.namespace)
        except BaseException as exc:
            return {"ok": False, "error": _describe(exc)}
        return {"ok": True}

    def call(self, name: str, args: Any, kwargs: Any) -> dict[str, Any]:
        function = self.namespace.get(name)
        if function is None:
            return {"ok": False, "error": {"type": "NameError", "message": f"name {name!r} is not defined"}}
        try:
            positional = decode_value(args)
            keywords = decode_value(kwargs) if kwargs is not None else {}
            result = function(*positional, **keywords)
        except BaseException as exc:
            return {"ok": False, "error": _describe(exc)}
        try:
            encoded = encode_value(result)
            dumps(encoded)
        except BaseException as exc:
            return {"ok": True, "value": {"X": f"{type(result).__name__} ({_describe(exc)['message']})"}}
        return {"ok": True, "value": encoded}

    def compile_native(self, request: dict[str, Any]) -> dict[str, Any]:
        """Compiles a program here, in the sandbox, under a time limit; returns the binary.

        The compiler runs as the candidate would (own process group, first for the memory
        killer); what it cannot finish in time, or in memory, is the program's compile error.
        `command` (languages.compile_command) names `source_name` and `output`; a directory
        output (Java's classes) comes back as one zip (a jar). Without `command`: C++ `argv`.
        """
        source_name = request.get("source_name") or SOURCE_NAME
        output = request.get("output") or BINARY_NAME
        for name in (source_name, output):
            if type(name) is not str or "/" in name or name in ("", ".", "..", STDIN_NAME):
                return {"ok": False, "error": {"type": "ProtocolError", "message": "bad file name"}}
        _write_new(source_name, request["source"].encode("utf-8", "surrogateescape"))
        try:  # noqa: SIM105 - contextlib would cost start-up time
            os.unlink(output)
        except OSError:
            pass
        _write_new(STDIN_NAME, b"")
        if not _put_files(request.get("files")):  # headers beside the source (testlib.h)
            return {"ok": False, "error": {"type": "ProtocolError", "message": "bad file name"}}
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if request.get("command"):
            here = os.getcwd()  # the work dir: /tmp in the sandbox, a temp dir in unsafe mode
            argv = [str(part).replace("{cwd}", here) for part in request["command"]]
        else:
            argv = [str(part) for part in request["argv"]] + ["-o", BINARY_NAME, SOURCE_NAME]
        limit = float(request["time_limit_s"])
        mark = _mark()
        pid = _spawn(argv[0], argv, out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        if pid < 0:
            run = _not_started(out_r, err_r, -pid)
        else:
            run = _supervise(pid, out_r, err_r, limit, 1 << 16, mark, _wall_limit(request, limit))
        if run["exit"] or run["signal"] or run["timeout"] or not os.path.lexists(output):
            return {
                "ok": True,
                "compiled": False,
                "started": pid >= 0,  # False: the compiler never ran (no verdict on the source)
                "timeout": run["timeout"],
                "signal": run["signal"],
                "stderr": run["stderr"],
            }
        binary = _output_bytes(output, int(request["max_binary_bytes"]))
        if binary is None:
            return {
                "ok": True,
                "compiled": False,
                "timeout": False,
                "signal": 0,
                "stderr": b64encode(b"binary too large"),
            }
        if not _wipe("."):
            self.clean = False
        self._keep_program(binary)
        return {"ok": True, "compiled": True, "binary": b64encode(binary)}

    def put_binary(self, request: dict[str, Any]) -> dict[str, Any]:
        """Installs a binary compiled earlier (the grader's compile cache) as the program."""
        self._keep_program(b64decode(request["data"]))
        return {"ok": True}

    def _keep_program(self, binary: bytes) -> None:
        """Keeps the program where no run can change it: a memfd sealed against writes, exec'd by
        fd (fexecve). Where memfds cannot be exec'd, its bytes, written afresh before every run."""
        self._forget_program()
        try:
            import fcntl

            try:
                fd = os.memfd_create("prog", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING | _MFD_EXEC)
            except OSError:  # a kernel before MFD_EXEC (6.3)
                fd = os.memfd_create("prog", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                view = memoryview(binary)
                while view:
                    view = view[os.write(fd, view) :]
                seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
                os.fchmod(fd, 0o500)
            except BaseException:
                os.close(fd)
                raise
            self.program = fd
        except (OSError, AttributeError, ImportError):
            self.program = binary

    def _forget_program(self) -> None:
        if type(self.program) is int:
            try:  # noqa: SIM105 - contextlib would cost start-up time
                os.close(self.program)
            except OSError:
                pass
        self.program = None

    def _program_file(self) -> Any:
        """What a run execs: the sealed memfd (its mode set back: a run may chmod it through
        /proc/self/exe), or (fallback) the bytes written to a fresh file."""
        if type(self.program) is int:
            os.fchmod(self.program, 0o500)
            return self.program
        if self.program is None:
            return None
        _write_new(BINARY_NAME, self.program, 0o700)
        return os.path.abspath(BINARY_NAME)

    def _source(self, request: dict[str, Any]) -> Any:
        """The Python program compiled once (None and a run to report when it does not compile)."""
        if self.compiled is None:
            try:
                self.compiled = compile(request["source"], "solution.py", "exec")
            except BaseException as exc:
                import traceback

                message = "".join(traceback.format_exception_only(type(exc), exc)).encode()
                return None, {
                    "ok": True,
                    "exit": 1,
                    "signal": 0,
                    "timeout": False,
                    "output_limit": False,
                    "stdout": "",
                    "stderr": b64encode(message),
                }
        return self.compiled, None

    def _protect(self) -> None:
        """Undumpable before the first run, sealed or not: a run's processes (the same uid) cannot
        then open this process's memory or fds (/proc/pid/mem, /proc/pid/fd) to rewrite how it
        judges a later run of the sample, or write frames on its pipe."""
        if not self.undumpable:
            _oom_adjust(None)  # its fd opened while it can be: spawned runs take 1000 from it
            self.undumpable = _undumpable()
            if self.undumpable and not _SEALED:
                _SEALED.append(True)

    def stdio(self, request: dict[str, Any]) -> dict[str, Any]:
        """Runs the program as __main__ in a fresh child on one input; reports its exit and output.

        A binary may get `files` beside it and `args` (a checker: `input output answer`); the
        work dir is emptied after such a run."""
        self._protect()
        if request.get("binary"):
            if self.program is None:
                return _NO_PROGRAM
            files = request.get("files")
            if not _put_files(files):
                return {"ok": False, "error": {"type": "ProtocolError", "message": "bad file name"}}
            args = ["prog"] + [str(arg) for arg in request.get("args", [])]
            run = self._stdio(None, request, self._program_file(), args)
            if (files and not _wipe(".")) or run.get("tampered"):
                self.clean = False
            return run
        compiled, failed = self._source(request)
        if failed is not None:
            return dict(failed)
        run = self._stdio(compiled, request, None)
        if run.get("tampered"):
            self.clean = False
        return run

    def stdio_batch(self, request: dict[str, Any]) -> None:
        """A sample's stdio tests: each input in a fresh child, in turn, one reply frame per input.

        Between runs every other process is killed (as after any run) and the work dir emptied,
        so no run leaves a file or a process for the next; the program itself is sealed
        (`_keep_program`). The batch keeps the sample's rules: a run gets at most `time_limit_s`
        and what is left of `budget_s` (counted once the program is installed), and after
        `max_timeouts` timed-out runs the rest are not run. A work dir that cannot be emptied, or
        a run that tampered with this process (`_supervise`), ends the batch: the rest are
        answered `dirty` (the trusted side starts a fresh sandbox).
        """
        self._protect()
        if request.get("data") is not None:
            self._keep_program(b64decode(request["data"]))
        compiled, failed, executable = None, None, None
        if request.get("binary"):
            if self.program is None:
                failed = _NO_PROGRAM
        else:
            compiled, failed = self._source(request)
        limit = float(request["time_limit_s"])
        wall = _wall_limit(request, limit)
        deadline = time.monotonic() + float(request["budget_s"])
        timeouts_left = int(request["max_timeouts"])
        inputs, max_outputs = request["inputs"], request["max_output_bytes"]
        for index in range(len(inputs)):
            text, max_output = inputs[index], max_outputs[index]
            left = deadline - time.monotonic()
            if not self.clean:
                reply = {"skipped": "dirty"}
            elif left <= 0:
                reply = {"skipped": "budget"}
            elif timeouts_left <= 0:
                reply = {"skipped": "timeouts"}
            elif failed is not None:
                reply = failed
            else:
                if request.get("binary"):
                    executable = self._program_file()
                run: dict[str, Any] = {
                    "input": text,
                    "time_limit_s": min(limit, left),
                    "wall_limit_s": min(wall, left),
                    "max_output_bytes": max_output,
                    "run": request.get("run"),
                }
                reply = self._stdio(compiled, run, executable)
                timeouts_left -= 1 if reply["timeout"] else 0
                self.clean = _wipe(".") and not reply.get("tampered")
            write_frame(self.ctl_out, reply)

    def _stdio(
        self, compiled: Any, request: dict[str, Any], executable: Any, args: Any = None
    ) -> dict[str, Any]:
        """One run on one input: the Python program in a fork of this process, or the executable
        (the sealed memfd, or a path) spawned without one."""
        _write_new(STDIN_NAME, request["input"].encode("utf-8", "surrogateescape"))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        mark = _mark()
        if executable is None:
            pid = os.fork()
            if pid == 0:
                close = (self.ctl_in, self.ctl_out, out_r, err_r, *_OOM_ADJ[:1], *_CPU_USAGE, *_WORK_DIR[:1])
                _child_main(compiled, out_w, err_w, close)
        elif request.get("run"):  # an interpreter's argv (languages.py): the program as fd 3
            fd = executable if type(executable) is int else -1
            path = "/proc/self/fd/3" if fd >= 0 else executable
            argv = [path if part == "{program}" else str(part) for part in request["run"]]
            pid = _spawn(argv[0], argv + list(args or ["prog"])[1:], out_w, err_w, fd)
        else:
            if type(executable) is int:
                executable = "/proc/self/fd/" + str(executable)  # the spawned process's own copy
            pid = _spawn(executable, args or ["prog"], out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        if pid < 0:
            return _not_started(out_r, err_r, -pid)
        limit = float(request["time_limit_s"])
        wall = _wall_limit(request, limit)
        return _supervise(pid, out_r, err_r, limit, int(request["max_output_bytes"]), mark, wall)


def _output_bytes(output: str, max_bytes: int) -> Any:
    """A compile's output as bytes: a regular file's, or a directory's regular files as one
    stored zip (Java's classes, a jar); None when over `max_bytes` (or not a file or directory)."""
    import stat

    mode = os.lstat(output).st_mode
    if stat.S_ISREG(mode):
        if os.path.getsize(output) > max_bytes:
            return None
        with open(output, "rb") as handle:
            return handle.read()
    if not stat.S_ISDIR(mode):
        return None
    import io
    import zipfile

    found, total = [], 0
    for folder, _, names in os.walk(output):
        for name in sorted(names):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                found.append(path)
    if total > max_bytes:
        return None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for path in found:
            archive.write(path, os.path.relpath(path, output))
    data = buffer.getvalue()
    return data if len(data) <= max_bytes else None


def _put_files(files: Any) -> bool:
    """Writes `{name: base64 data}` into the work dir; False (nothing written) for a name that is
    not a plain file name of its own (a path, a dot name, the harness's own files)."""
    if not files:
        return True
    for name in files:
        if type(name) is not str or not name or "/" in name or name.startswith(".") or name == SOURCE_NAME:
            return False
    for name, data in files.items():
        _write_new(name, b64decode(data))
    return True


def _parent_dir(path: str, create: bool) -> tuple[int, str]:
    """An fd of the directory that holds `path` (relative to the work dir), each step opened without
    following a symlink (a run's `sub -> /` or `sub -> /proc/self` leads nowhere), and its last name."""
    parts = path.split("/")
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            if create:
                try:  # noqa: SIM105 - contextlib would cost start-up time
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            step = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _confined(name: Any) -> bool:
    """A relative path below the work dir, none of the harness's own files (checked on both sides)."""
    if type(name) is not str or not name or name.startswith("/") or "\0" in name:
        return False
    parts = name.split("/")
    return all(part not in ("", ".", "..") for part in parts) and name not in (STDIN_NAME, BINARY_NAME)


def upload_files(files: Any) -> dict[str, Any]:
    """A /run_code request's `files` ({relative path: base64}) into the work dir, directories made."""
    if type(files) is not dict or not all(_confined(name) for name in files):
        return {"ok": False, "error": {"type": "ProtocolError", "message": "bad file name"}}
    for name, data in files.items():
        fd, leaf = _parent_dir(name, True)
        try:
            out = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=fd)
        finally:
            os.close(fd)
        try:
            view = memoryview(b64decode(data))
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
    return {"ok": True}


def fetch_files(names: Any, max_bytes: int) -> dict[str, Any]:
    """The regular files named (relative paths, never through a symlink), base64, `max_bytes` in
    all; a missing or non-regular one is left out, one past what is left is named in `over`."""
    found: dict[str, str] = {}
    over: list[str] = []
    for name in names if type(names) is list else ():
        if not _confined(name) or name in found:
            continue
        try:
            fd, leaf = _parent_dir(name, False)
            try:
                handle = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            finally:
                os.close(fd)
        except OSError:
            continue
        try:
            if os.fstat(handle).st_mode & 0o170000 != 0o100000:  # not a regular file: a FIFO, a dir
                continue
            chunks, size = [], 0
            while size <= max_bytes:
                chunk = os.read(handle, min(1 << 20, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError:
            continue
        finally:
            os.close(handle)
        if size > max_bytes:
            over.append(name)
            continue
        max_bytes -= size
        found[name] = b64encode(b"".join(chunks))
    return {"ok": True, "files": found, "over": over}


def _write_new(name: str, data: bytes, mode: int = 0o600) -> None:
    """`data` in a new file `name`: whatever a run left under that name (a symlink, a FIFO) is
    removed first, never written through."""
    try:  # noqa: SIM105 - contextlib would cost start-up time
        os.unlink(name)
    except OSError:
        pass
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


# This process's /proc/self/oom_score_adj (an fd) and its value at start. Opened before the harness
# makes itself undumpable (its /proc files are root's then: an open after that fails, and spawned
# runs kept the harness's value, not 1000); closed in a Python run's fork, which could otherwise
# write the harness's value through it.
_OOM_ADJ: list[Any] = []


def _oom_adjust(value: Any) -> None:
    """Sets this process's oom_score_adj (None: back to its value at start); best effort."""
    try:
        if not _OOM_ADJ:
            fd = os.open("/proc/self/oom_score_adj", os.O_RDWR)
            _OOM_ADJ.extend((fd, os.pread(fd, 32, 0).strip() or b"0"))
        os.pwrite(_OOM_ADJ[0], _OOM_ADJ[1] if value is None else value, 0)
    except OSError:
        pass


_SPAWN_DEFAULTS = (_signal.SIGPIPE, _signal.SIGXFSZ)  # ignored here; at their defaults in a run


def _spawn(path: str, argv: Any, out_w: int, err_w: int, program_fd: int = -1) -> int:
    """Starts an executable on the stdin file, with out_w and err_w as its stdout and stderr, in a
    process group of its own, signals at their defaults (as a judge runs a binary); its pid, or
    -errno when it could not be executed. No fork of this process: posix_spawn (vfork) costs
    a fraction of one. Every other fd of this process is close-on-exec. The run is the memory
    killer's first choice (oom_score_adj 1000, inherited): this process takes that value only
    while it spawns, and its own back at once. `program_fd` (the sealed program, for an
    interpreter to read) is the run's fd 3."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, STDIN_NAME, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    if program_fd >= 0:
        actions.append((os.POSIX_SPAWN_DUP2, program_fd, 3))
    _oom_adjust(b"1000")
    try:
        return os.posix_spawn(
            path,
            argv,
            os.environ,
            file_actions=actions,
            setpgroup=0,
            setsigdef=_SPAWN_DEFAULTS,
            setsigmask=(),
        )
    except OSError as exc:
        return -(exc.errno or 1)
    finally:
        _oom_adjust(None)


def _not_started(out_r: int, err_r: int, errno: int) -> dict[str, Any]:
    """The report of a run whose executable could not be started (exit 127, as a shell says)."""
    os.close(out_r)
    os.close(err_r)
    message = "cannot execute the program: " + os.strerror(errno) + "\n"
    return {
        "ok": True,
        "exit": 127,
        "signal": 0,
        "timeout": False,
        "output_limit": False,
        "stdout": "",
        "stderr": b64encode(message.encode()),
    }


def _child_main(
    compiled: Any,
    out_w: int,
    err_w: int,
    close: tuple[int, ...],
    _exit: Any = _EXIT,
    _stderr: Any = _STDERR,
) -> None:
    """A Python run's process: the program `compiled` as __main__, in a fork of this process.

    After the program it does what the interpreter would at its end (waits for its non-daemon
    threads, flushes its streams, reports an uncaught exception through `sys.excepthook`) and
    exits through `_exit`, bound when this function was defined: a program may rebind `os._exit`,
    `sys.exit`, `exit` or `print` (SandboxFusion's anti-cheat header does) without reaching this
    process's way out, which never returns into the harness. Tracebacks start at the program's
    own frames.
    """
    status = 121
    try:
        for stream in (sys.stdout, sys.stderr):  # nothing buffered before the fork leaks into this run
            try:  # noqa: SIM105 - contextlib would cost start-up time
                stream.flush()
            except BaseException:
                pass
        for fd in close:
            os.close(fd)
        os.setpgid(0, 0)
        if _SEALED:
            _dumpable_again()  # this process only (else its /proc files are root's): the harness stays sealed
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # the memory killer takes the candidate, not the harness
        except OSError:
            pass
        stdin = os.open(STDIN_NAME, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (stdin, out_w, err_w):
            os.close(fd)
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # as a fresh interpreter has them
            _signal.signal(sig, _signal.SIG_IGN)
        _signal.signal(_signal.SIGCONT, _signal.SIG_DFL)
        stdin_text = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        sys.stdin = sys.__stdin__ = stdin_text  # type: ignore[misc]
        out = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        err = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
        sys.stdout = sys.__stdout__ = out  # type: ignore[misc]
        sys.stderr = sys.__stderr__ = err  # type: ignore[misc]
        namespace = {"__name__": "__main__", "__builtins__": builtins, "__file__": "solution.py"}
        status = _run_main(compiled, namespace)
    finally:
        _exit(status)


def _run_main(compiled: Any, namespace: dict[str, Any], _stderr: Any = _STDERR) -> int:
    """Runs the program; its exit status (0-255), as the interpreter's end would make it."""
    status = 0
    try:
        try:
            exec(compiled, namespace)
        finally:
            threading = sys.modules.get("threading")  # the interpreter waits for non-daemon threads
            if threading is not None:
                threading._shutdown()
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:
        status = 1
        try:
            trace = exc.__traceback__
            while trace is not None and trace.tb_frame.f_globals is _HARNESS:
                trace = trace.tb_next  # the program's own frames only
            sys.excepthook(type(exc), exc.with_traceback(trace), trace)
        except BaseException:
            _stderr(2, b"uncaught exception\n")
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        status = status or 120
    return status


def _exit_status(exc: BaseException) -> int:
    """SystemExit's status as the interpreter makes it: None 0, an int its low byte, else 1 (printed)."""
    code = exc.args[0] if len(exc.args) == 1 else (exc.args or None)
    if code is None:
        return 0
    if isinstance(code, int):
        try:
            return int.__and__(int.__index__(code), 0xFF)
        except BaseException:
            return 1
    try:  # noqa: SIM105 - contextlib would cost start-up time
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


_CONTINUED = [0]  # SIGCONTs this process got: a run stopped it and let it go on


def _on_continue(signum: int, frame: Any) -> None:
    _CONTINUED[0] += 1


_CPU_USAGE: list[int] = []  # an fd of the sandbox's cpuacct.usage (read-only), where it has one


def _open_cpu_usage() -> None:
    """Opens the file that ARBITER_CPU_USAGE names and unsets it (runs inherit the environment)."""
    path = os.environ.pop("ARBITER_CPU_USAGE", "")
    if path:
        try:
            fd = os.open(path, os.O_RDONLY)  # close-on-exec; a Python run's fork closes it
            int(os.pread(fd, 64, 0))
            _CPU_USAGE.append(fd)
        except (OSError, ValueError):
            pass


def _cpu_ns() -> int:
    """Nanoseconds of CPU every process of the sandbox used so far; -1 when unknown."""
    if not _CPU_USAGE:
        return -1
    try:
        return int(os.pread(_CPU_USAGE[0], 64, 0))
    except (OSError, ValueError):
        return -1


def _wall_limit(request: dict[str, Any], limit: float) -> float:
    return max(float(request.get("wall_limit_s") or limit), limit)


_CPU_POLL_S = 0.02  # how often a CPU-timed run's usage is read


def _mark() -> Any:
    """Taken before a run starts: what `_supervise` compares after it (see there)."""
    return _CONTINUED[0], _attributes(), time.monotonic(), _cpu_ns()


def _supervise(
    pid: int,
    out_r: int,
    err_r: int,
    time_limit_s: float,
    max_output: int,
    mark: Any,
    wall_limit_s: float = 0.0,
) -> dict[str, Any]:
    """Drains the child's output (capped) until it exits or overruns; then kills every other process.

    Where the sandbox's CPU use is known (`_cpu_ns`), a run overruns when the sandbox used more
    than `time_limit_s` of CPU since `mark` (read as it runs and once more after every process
    of the run was killed: a fork, a daemon or an unreaped child counts as the run's), or when
    `wall_limit_s` passed (it sleeps or blocks). Otherwise `time_limit_s` is the wall limit.

    A run that stopped this process (SIGSTOP, then SIGCONT from a helper once it was done), even
    before this started its clock, or slowed it (its nice value, scheduling policy, CPUs or
    rlimits, which the same uid may set), ran on a clock nobody watched: it left an exit status
    waiting for this process to wake, past its time limit, and passed. Such a run is `tampered`:
    judged on the clock started before it was (`mark`, a timeout if its exit was seen only past
    the limit), and the harness is not fit for another run (an unprivileged process cannot set
    all of that back).
    """
    cpu_start = mark[3]
    cpu_timed = cpu_start >= 0
    cpu_limit_ns = int(time_limit_s * 1e9)
    wall = max(wall_limit_s, time_limit_s) if cpu_timed else time_limit_s
    deadline = time.monotonic() + wall
    stdout, stderr_tail = bytearray(), bytearray()
    open_fds = {out_r, err_r}
    status, timed_out, output_limit = None, False, False
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    over = ""
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out, over = True, "wall"
            break
        wait = left if pidfd >= 0 else min(left, 0.05)
        if cpu_timed:
            if _cpu_ns() - cpu_start > cpu_limit_ns:
                timed_out, over = True, "cpu"
                break
            wait = min(wait, _CPU_POLL_S)
        watched = list(open_fds) + ([pidfd] if pidfd >= 0 else [])
        ready, _, _ = select.select(watched, [], [], wait)
        for fd in ready:
            if fd == pidfd:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
            elif fd == out_r:
                stdout += chunk
            else:
                stderr_tail = (stderr_tail + chunk)[-4096:]
        if len(stdout) > max_output:
            output_limit = True
            break
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
    seen = time.monotonic()  # the exit (or the timeout) seen
    _kill_others(pid)
    if status is None:
        _, status = os.waitpid(pid, 0)
    for fd in list(open_fds):  # what the child wrote before it exited
        os.set_blocking(fd, False)
        try:
            while len(stdout) <= max_output:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                if fd == out_r:
                    stdout += chunk
                else:
                    stderr_tail = (stderr_tail + chunk)[-4096:]
        except BlockingIOError:
            pass
    for fd in (out_r, err_r) + ((pidfd,) if pidfd >= 0 else ()):
        os.close(fd)
    _reap()
    if len(stdout) > max_output:
        output_limit = True
        del stdout[max_output:]
    continued, attributes, started, _ = mark
    tampered = _CONTINUED[0] != continued or _attributes() != attributes
    if not timed_out and cpu_timed and _cpu_ns() - cpu_start > cpu_limit_ns:
        timed_out, over = True, "cpu"  # its exit came after the limit (or its processes' CPU did)
    if not timed_out and tampered and seen > started + wall:
        timed_out, over = True, "wall"
    return {
        "ok": True,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
        "timeout": timed_out,
        "over": over,  # which limit: "cpu" (CPU time) or "wall" (the wall clock)
        "tampered": tampered,
        "output_limit": output_limit,
        "stdout": b64encode(bytes(stdout)),
        "stderr": b64encode(bytes(stderr_tail)),
    }


def _kill_others(group: int) -> None:
    """SIGKILL every process of this uid in the sandbox but this one: daemons, forks, stopped ones.

    Only inside bwrap's pid namespace: unsandboxed (unsafe mode) the uid's processes are the
    host's (the grader's own, as a non-root user), so there only the run's process group goes.
    """
    if os.environ.get("ARBITER_SANDBOX") != "bwrap":
        try:  # noqa: SIM105 - contextlib would cost start-up time
            os.killpg(group, _signal.SIGKILL)
        except OSError:
            pass
        return
    if _SPARED:  # a sample's worker: everything but its zygote (kill(-1) would take that too)
        _kill_all_but(_SPARED[0])
        return
    for _ in range(3):
        try:
            os.kill(-1, _signal.SIGKILL)
        except ProcessLookupError:
            return
        except OSError:
            return


_SPARED: list[int] = []  # in a sample's worker: its zygote's pid


def _kill_all_but(spared: int) -> None:
    """SIGKILLs every live process of the sandbox's pid namespace but this one, `spared` and its
    init, round after round until a round finds none (a process that forked while a round listed
    them leaves a child for the next; the pids limit bounds them)."""
    me = os.getpid()
    for _ in range(1000):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            if pid in (me, spared, 1):
                continue
            try:
                with open("/proc/" + name + "/stat", "rb") as handle:
                    stat = handle.read()
                if stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X"):
                    continue  # a zombie: dead already, its parent (or init) reaps it
                os.kill(pid, _signal.SIGKILL)
                found = True
            except (OSError, ValueError):
                pass
        if not found:
            return


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# ---------------------------------------------------------------- the judge (label code)

TEST_FILE = "<test>"


class CandidateGone(BaseException):
    """The trusted process ended this test (the candidate failed); unwinds past `except Exception`."""


class _Proxy:
    """Stands for a function of the program: a call is a frame out and the candidate's reply in."""

    __slots__ = ("judge", "name")

    def __init__(self, judge: Judge, name: str) -> None:
        self.judge = judge
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.judge.call(self.name, args, kwargs)

    def __repr__(self) -> str:
        return "<candidate " + self.name + ">"


class Judge:
    """Runs label code; its `candidates` names call the program through the trusted process."""

    def __init__(self, ctl_in: int, ctl_out: int) -> None:
        self.ctl_in = ctl_in
        self.ctl_out = ctl_out
        self.base: dict[str, Any] = {}
        self.candidates: list[str] = []
        self.test_source = ""
        self.calls = 0

    def call(self, name: str, args: Any, kwargs: Any) -> Any:
        try:
            message = {"op": "call", "name": name, "args": encode_value(list(args))}
            if kwargs:
                message["kwargs"] = encode_value(dict(kwargs))
        except CodecError as exc:
            raise TypeError("argument cannot be sent to the candidate: " + str(exc)) from None
        self.calls += 1
        write_frame(self.ctl_out, message)
        try:
            reply = read_frame(self.ctl_in)
        except EOFError:
            raise CandidateGone from None
        except (ValueError, RecursionError, MemoryError):
            raise CandidateError("malformed reply from the candidate") from None
        if type(reply) is not dict or reply.get("abort"):
            raise CandidateGone
        if not reply.get("ok"):
            raise candidate_exception(reply.get("error"))
        try:
            return decode_value(reply.get("value"))
        except (CodecError, ValueError, RecursionError, MemoryError) as exc:
            raise CandidateError("malformed value from the candidate: " + str(exc)[:200]) from None

    def _install(self, namespace: dict[str, Any]) -> None:
        for name in self.candidates:
            namespace[name] = _Proxy(self, name)

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        """Imports the stdlib modules the tests name, runs helpers, setup and test code once."""
        self.candidates = [str(name) for name in request.get("candidates", [])]
        self.test_source = str(request.get("test", ""))
        namespace: dict[str, Any] = {"__name__": "__test__", "__builtins__": builtins}
        try:
            for module in request.get("modules", []):
                try:  # noqa: SIM105 - contextlib would cost start-up time
                    namespace[module] = __import__(module)
                except ImportError:
                    pass
            self._install(namespace)
            for key, filename in (("helpers", "<helpers>"), ("setup", "<setup>"), ("test", TEST_FILE)):
                if request.get(key):
                    exec(compile(request[key], filename, "exec"), namespace)
                    self._install(namespace)  # a prompt's stub of the entry point never hides it
        except CandidateGone:
            return {"ok": False, "gone": True}
        except BaseException as exc:
            return {"ok": False, "candidate": self.calls > 0, "error": _describe(exc)}
        self.base = namespace
        return {"ok": True}

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        source = request.get("code", "")
        try:
            if request.get("check"):
                check = self.base.get("check")
                if not callable(check):
                    return {
                        "done": True,
                        "passed": False,
                        "reason": "label",
                        "message": "no check(candidate)",
                    }
                check(_Proxy(self, str(request["check"])))
            elif request.get("output") is not None:  # a checker: (input, expected, output) -> verdict
                checker = self.base.get("check")
                if not callable(checker):
                    return {"done": True, "passed": False, "reason": "label", "message": "no check(...)"}
                verdict = checker(str(request["input"]), str(request["expected"]), str(request["output"]))
                passed = checker_passed(verdict, request.get("threshold", 1.0))
                if not passed:
                    return {
                        "done": True,
                        "passed": False,
                        "reason": "wrong",
                        "message": "the checker said no",
                    }
            else:
                exec(compile(source, TEST_FILE, "exec"), dict(self.base))
        except CandidateGone:
            return {"done": True, "passed": False, "reason": "gone", "message": ""}
        except AssertionError as exc:
            where = _test_line(exc, source or self.test_source)
            return {"done": True, "passed": False, "reason": "wrong", "message": where or str(exc)[:200]}
        except BaseException as exc:
            return {"done": True, "passed": False, "reason": "error", "message": _short(exc)}
        return {"done": True, "passed": True}


# Modules test code commonly imports: loaded once in a judge's zygote, shared by its forks.
_PRELOAD = ("typing", "math", "random", "collections", "itertools", "functools", "heapq", "string", "re")


def _preimport() -> None:
    for name in _PRELOAD:
        try:  # noqa: SIM105 - contextlib would cost start-up time
            __import__(name)
        except ImportError:
            pass


_SEALED: list[bool] = []  # non-empty once this harness is sealed (its runs' children set themselves back)


def _dumpable_again() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, for the calling process only
    except BaseException:
        pass


def _undumpable() -> bool:
    """PR_SET_DUMPABLE 0: the label's processes (same uid) cannot open this one's /proc/pid/mem.

    Without it a judge's child could rewrite its zygote and so every later sample's judging;
    forks inherit the flag. ptrace itself is already refused by the seccomp filter. False when
    it could not be set: then the zygote says it is not clean and serves no second sample.
    """
    try:
        import ctypes

        return int(ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)) == 0  # PR_SET_DUMPABLE
    except BaseException:
        return False


def _judge_child(ctl_in: int, ctl_out: int, request: dict[str, Any], _exit: Any = _EXIT) -> None:
    code = 0
    try:
        os.setpgid(0, 0)
        _dumpable_again()  # else its /proc files are root's, as the zygote's: the write below failed
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # the memory killer takes the label's process, not the zygote
        except OSError:
            pass
        judge = Judge(ctl_in, ctl_out)
        write_frame(ctl_out, judge.load(request))
        while True:
            try:
                message = read_frame(ctl_in)
            except EOFError:
                break
            if type(message) is not dict or message.get("op") != "run":
                break
            write_frame(ctl_out, judge.run(message))
    except BaseException:
        code = 1
    finally:
        _exit(code)


def _attributes() -> Any:
    """What a same-uid process can set on this one from outside: nice, policy, CPUs, rlimits."""
    import resource

    limits = [
        resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")
    ]
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except OSError:
        cpus = []
    return [os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), cpus, limits]


def _wipe(directory: str) -> bool:
    """Empties the work dir (what a run or label code wrote); False if something could not be removed.

    Iterative (a deep tree cannot exhaust the stack), and every directory is made writable and
    searchable before it is listed: a `chmod 000` directory is emptied like any other. The work
    dir itself outlives the wipe, so its ACLs go too: a default ACL there (`user::---`, set by a
    run that owns the dir) gave every file made in it later, the next test's stdin or a C++
    source, the modes it names: unreadable, for the rest of the sample and, in a reused sandbox,
    for every later sample (a compile error in the compile cache for a correct program).
    """
    clean = _restore_mode(directory) and _no_acls(directory)
    stack = [(directory, False)]
    while stack:
        path, emptied = stack.pop()
        if emptied:
            if path != directory:
                try:
                    os.rmdir(path)
                except OSError:
                    clean = False
            continue
        stack.append((path, True))
        try:
            if path != directory:
                os.chmod(path, 0o700)
            else:
                mode = os.stat(path).st_mode
                if mode & 0o700 != 0o700:  # the work dir itself made read-only by a run
                    os.chmod(path, (mode & 0o7777) | 0o700)
            entries = list(os.scandir(path))
        except OSError:
            clean = False
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, False))
                else:
                    os.unlink(entry.path)
            except OSError:
                clean = False
    return _restore_mode(directory) and clean


_WORK_DIR: list[int] = []  # an fd of the work dir and its mode, taken when the harness started


def _restore_mode(directory: str) -> bool:
    """The work dir's mode back to what it was at start, through an fd (a `chmod 000 .` makes the
    name "." itself unusable): a run's `chmod 700 /tmp`, a lost sticky bit or a set-gid bit is
    not left for the next sample; False if it cannot be set back."""
    if not _WORK_DIR or directory != ".":
        return True
    fd, mode = _WORK_DIR
    try:
        if os.fstat(fd).st_mode & 0o7777 != mode:
            os.fchmod(fd, mode)
    except OSError:
        return False
    return True


_ACLS = ("system.posix_acl_default", "system.posix_acl_access")


def _no_acls(directory: str) -> bool:
    """Removes the directory's POSIX ACLs; False if one is left (other xattrs, such as an LSM's
    labels, are not the run's to set and stay)."""
    for name in _ACLS:
        try:
            os.removexattr(directory, name)
        except OSError as exc:
            if exc.errno not in (61, 95):  # ENODATA: none set; EOPNOTSUPP: no ACLs on this fs
                return False
        except AttributeError:  # no xattr calls on this platform: no ACLs either
            return True
    return True


def _short(exc: BaseException) -> str:
    text = _describe(exc)
    if isinstance(exc, CandidateError):
        return text["message"][:300]
    return (text["type"] + ": " + text["message"])[:300]


def _test_line(exc: BaseException, source: str) -> str:
    """The label's failing line (`assert candidate(3) == 5`), from the test code's traceback."""
    number = 0
    trace = exc.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == TEST_FILE:
            number = trace.tb_lineno
        trace = trace.tb_next
    lines = source.splitlines()
    return lines[number - 1].strip()[:200] if 0 < number <= len(lines) else ""


def _exit(code: Any = None) -> None:
    raise SystemExit(code)


def main() -> None:
    if not hasattr(builtins, "exit"):  # `site` adds them; the sandbox's interpreter may run without it
        setattr(builtins, "exit", _exit)  # noqa: B010
        setattr(builtins, "quit", _exit)  # noqa: B010
    ctl_in, ctl_out = os.dup(0), os.dup(1)  # dup() makes them close-on-exec
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # a function test's prints go to the drained stderr pipe, never into a reply
    os.close(devnull)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    _signal.signal(_signal.SIGCONT, _on_continue)  # counts continues after a stop (_supervise)
    _open_cpu_usage()
    work = os.open(".", os.O_RDONLY | os.O_DIRECTORY)  # close-on-exec; a Python run's fork closes it
    _WORK_DIR.extend((work, os.fstat(work).st_mode & 0o7777))
    Harness(ctl_in, ctl_out).serve()


if __name__ == "__main__":
    main()
