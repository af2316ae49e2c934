"""Optional backend: runs go to an existing SandboxFusion server (`POST /run_code`) instead of bwrap.

For users who already operate SandboxFusion. A `RemoteSandbox` speaks the harness protocol to
the session, so test logic stays here in trusted code exactly as with the local sandbox:
`stdio` requests become one run with the test's stdin; `load` and `call` requests become a run
of the harness in one-shot mode (load the program, make the call, print the reply after a
random marker). Calls do not share state across requests (each is a fresh process), which
suits the pure functions unit tests call. Isolation is whatever that server provides.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx

from services.reward_rules.code.backends.base import SandboxLike
from services.reward_rules.code.backends.bwrap.sandbox import Limits, SandboxError
from services.reward_rules.code.harness import b64encode, dumps, loads
from services.reward_rules.code.runner import harness_source

_ONE_SHOT = """\
import os as _os
_ns = {{"__name__": "arbiter_harness"}}
exec(compile({harness!r}, "harness", "exec"), _ns)
_out = _os.dup(1)
_os.dup2(2, 1)
_h = _ns["Harness"](-1, -1)
_reply = _h.load({program!r}, "__solution__", {prelude!r})
_call = {call!r}
if _reply.get("ok") and _call is not None:
    _reply = _h.call(_call["name"], _call["args"], _call.get("kwargs"))
_os.write(_out, ("\\n" + {marker!r} + _ns["dumps"](_reply) + "\\n").encode())
"""


class RemoteSandbox:
    """Looks like `Sandbox` to a session; each request is one `/run_code` call."""

    def __init__(self, client: httpx.Client, limits: Limits) -> None:
        self.client = client
        self.limits = limits
        self.cgroup = None
        self.stderr_tail = bytearray()
        self.stderr_bytes = 0
        self._program = ""
        self._prelude = ""
        self._dead = False

    def oom_kills(self) -> int:
        return 0

    def stderr_text(self) -> str:
        return self.stderr_tail.decode("utf-8", "replace")

    def wait_ready(self, deadline: float) -> None:
        return None

    def kill(self) -> None:
        self._dead = True

    def _run(self, code: str, stdin: str, timeout_s: float, deadline: float) -> dict[str, Any]:
        if self._dead:
            raise SandboxError("died", "the sandbox was killed")
        left = deadline - time.monotonic()
        if left <= 0:
            raise SandboxError("timeout", "deadline passed")
        body = {"code": code, "language": "python", "stdin": stdin, "run_timeout": max(timeout_s, 0.1)}
        try:
            response = self.client.post("/run_code", json=body, timeout=left + 5.0)
            response.raise_for_status()
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SandboxError("died", f"SandboxFusion request failed: {exc}") from None
        run = data.get("run_result") if isinstance(data, dict) else None
        if not isinstance(run, dict):
            raise SandboxError("died", f"SandboxFusion: {str(data.get('message', data))[:300]}")
        stderr = str(run.get("stderr") or "").encode("utf-8", "replace")
        self.stderr_bytes += len(stderr)
        self.stderr_tail = bytearray(stderr[-8192:])
        return run

    def request_raw(self, body: bytes, deadline: float, max_reply: int | None = None) -> bytes:
        """A judge's call frame, run here as a one-shot call; the reply as the harness wrote it."""
        try:
            message = loads(body.decode("utf-8"))
        except (ValueError, RecursionError):
            raise SandboxError("protocol", "request is not JSON") from None
        reply = dumps(self.request(message, deadline, max_reply)).encode()
        if max_reply is not None and len(reply) > max_reply:
            raise SandboxError("oversize", f"reply of {len(reply)} bytes is over the limit of {max_reply}")
        return reply

    def request(
        self, message: dict[str, Any], deadline: float, max_reply: int | None = None
    ) -> dict[str, Any]:
        op = message.get("op")
        if op == "stdio":
            limit = float(message["time_limit_s"])
            run = self._run(message["source"], message["input"], limit, deadline)
            stdout = str(run.get("stdout") or "").encode("utf-8", "surrogateescape")
            over = len(stdout) > int(message["max_output_bytes"])
            return {
                "ok": True,
                "exit": int(run.get("return_code") or 0) if run.get("status") != "TimeLimitExceeded" else -1,
                "signal": 0,
                "timeout": run.get("status") == "TimeLimitExceeded",
                "output_limit": over,
                "stdout": b64encode(stdout[: int(message["max_output_bytes"])]),
                "stderr": b64encode(bytes(self.stderr_tail[-4096:])),
            }
        if op == "load":
            self._program = message["source"]
            self._prelude = str(message.get("prelude") or "")
            return self._one_shot(None, deadline, max_reply)
        if op == "call":
            call = {k: message.get(k) for k in ("name", "args", "kwargs")}
            return self._one_shot(call, deadline, max_reply)
        raise SandboxError("protocol", f"unknown op {op!r}")

    def _one_shot(
        self, call: dict[str, Any] | None, deadline: float, max_reply: int | None
    ) -> dict[str, Any]:
        marker = "@@arbiter-" + secrets.token_hex(8) + "@@"
        code = _ONE_SHOT.format(
            harness=harness_source(), program=self._program, prelude=self._prelude, call=call, marker=marker
        )
        run = self._run(code, "", max(deadline - time.monotonic(), 0.1), deadline)
        if run.get("status") == "TimeLimitExceeded":
            raise SandboxError("timeout", "the run timed out")
        stdout = str(run.get("stdout") or "")
        lines = [line for line in stdout.splitlines() if line.startswith(marker)]
        if not lines:
            raise SandboxError("died", "the program exited before the harness replied")
        if max_reply is not None and len(lines[-1]) - len(marker) > max_reply:
            raise SandboxError("oversize", f"reply over the limit of {max_reply} bytes")
        try:
            reply = loads(lines[-1][len(marker) :])
        except ValueError:
            raise SandboxError("protocol", "reply is not JSON") from None
        if not isinstance(reply, dict):
            raise SandboxError("protocol", "reply is not an object")
        return reply


class SandboxFusionSource:
    """Hands out remote sandboxes bound to one HTTP client."""

    def __init__(self, url: str, limits: Limits) -> None:
        self.client = httpx.Client(base_url=url.rstrip("/"))
        self.limits = limits

    def acquire(self, memory_bytes: int) -> RemoteSandbox:
        return RemoteSandbox(self.client, self.limits)

    def set_memory_limit(self, sandbox: SandboxLike, memory_bytes: int) -> None:
        """The server applies its own limits."""

    def release(self, sandbox: SandboxLike) -> None:
        sandbox.kill()

    def close(self) -> None:
        self.client.close()


__all__ = ["RemoteSandbox", "SandboxFusionSource", "dumps"]
