"""The label's test code in a sandbox of its own, calling the program through this process.

Assert lines, setup, helpers and HumanEval `check` code arrive in the request, so they run
sandboxed like the program, but never in the program's sandbox: the comparisons must stay out
of the candidate's reach. This process relays frames between the two: a judge's call frame goes
to the candidate's harness as it is, the candidate's reply goes back as it is, bounded in size
and never parsed here, so a candidate's huge or deeply nested reply costs this process neither
time under the GIL nor memory. Only the judge's small verdict frame is decoded here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from services.reward_rules.code.pool import SandboxPool
from services.reward_rules.code.sandbox import Sandbox, SandboxError
from services.reward_rules.code.session import (
    CRASH,
    MEMORY,
    TIMEOUT,
    WRONG,
    CandidateFailure,
    InfrastructureError,
    Session,
    last_line,
)

_CALL_PREFIX = b'{"op":"call",'  # how the judge's harness writes a call (compact, op first)
_VERDICT_BYTES = 64 << 10
START_TIMEOUT_S = 30.0


class LabelError(Exception):
    """The label's own code failed before touching the program (a bad label, not a verdict)."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""
    message: str = ""


class Judge:
    """One sample's judge sandbox: loaded once, reused across tests until something fails."""

    def __init__(
        self, pool: SandboxPool, memory_bytes: int, load: dict[str, Any], max_value_bytes: int
    ) -> None:
        self.pool = pool
        self.memory_bytes = memory_bytes
        self.load_message = load
        self.max_value_bytes = max_value_bytes
        self.sandbox: Sandbox | None = None

    def _start(self) -> Sandbox:
        for attempt in range(2):
            sandbox: Sandbox = self.pool.acquire(self.memory_bytes)
            try:
                sandbox.wait_ready(time.monotonic() + START_TIMEOUT_S)
            except SandboxError as exc:
                self.pool.release(sandbox)
                if attempt or exc.kind == "timeout":
                    raise InfrastructureError(
                        f"judge sandbox did not start: {exc}; {sandbox.stderr_text()}"
                    ) from exc
                continue
            except Exception as exc:
                self.pool.release(sandbox)
                raise InfrastructureError(f"judge sandbox did not start: {exc}") from exc
            return sandbox
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.sandbox is not None:
            self.pool.release(self.sandbox)
            self.sandbox = None

    def run(self, message: dict[str, Any], candidate: Session, deadline: float) -> Verdict:
        """Runs one test (`{"op": "run", ...}`) against the loaded program by `deadline`."""
        try:
            if self.sandbox is None:
                self.sandbox = self._start()
                loaded = self._exchange(self.load_message, candidate, deadline)
                if not loaded.get("ok"):
                    self.close()
                    return self._load_failed(loaded)
            reply = self._exchange(message, candidate, deadline)
        except CandidateFailure as exc:  # the program timed out, ran out of memory, died
            self.close()
            return Verdict(False, exc.reason, exc.message)
        except SandboxError as exc:
            return self._judge_failed(exc)
        if reply.get("done") is not True:
            self.close()
            return Verdict(False, CRASH, "the test code broke the judge protocol")
        if reply.get("passed") is True:
            return Verdict(True)
        reason, detail = str(reply.get("reason", "")), str(reply.get("message", ""))[:300]
        if reason == "label":
            raise LabelError(f"the label's test code: {detail}")
        return Verdict(False, WRONG if reason == "wrong" else CRASH, detail)

    def _load_failed(self, reply: dict[str, Any]) -> Verdict:
        error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
        assert isinstance(error, dict)
        text = f"{error.get('type', 'Exception')}: {error.get('message', '')}"[:300]
        if reply.get("candidate") is True:  # the setup called the program, which failed it
            return Verdict(False, CRASH, text)
        raise LabelError(f"the label's test code raised {text}")

    def _judge_failed(self, exc: SandboxError) -> Verdict:
        """The judge stopped answering while testing this program: the program's values did it."""
        sandbox = self.sandbox
        assert sandbox is not None
        sandbox.kill()
        oom = sandbox.oom_kills()
        stderr = last_line(bytes(sandbox.stderr_tail))
        self.close()
        if exc.kind == "timeout":
            return Verdict(False, TIMEOUT, "")
        if oom:
            return Verdict(False, MEMORY, f"{self.memory_bytes >> 20} MB (the test on the program's values)")
        return Verdict(False, CRASH, f"the test code died: {stderr or exc}")

    def _exchange(self, message: dict[str, Any], candidate: Session, deadline: float) -> dict[str, Any]:
        """Sends a request to the judge, relays its calls to the program, returns its last reply."""
        judge = self.sandbox
        assert judge is not None
        body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode()
        judge.send_raw(body, deadline)
        while True:
            frame = judge.receive_raw(deadline, None)
            if not frame.startswith(_CALL_PREFIX):
                if len(frame) > _VERDICT_BYTES:
                    raise SandboxError("protocol", "verdict frame over the limit")
                try:
                    reply = json.loads(frame)
                except (ValueError, RecursionError):
                    raise SandboxError("protocol", "verdict is not JSON") from None
                if not isinstance(reply, dict):
                    raise SandboxError("protocol", "verdict is not an object")
                return reply
            answer = candidate.relay(frame, deadline, self.max_value_bytes)
            judge.send_raw(answer, deadline)
