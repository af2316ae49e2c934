"""The label's test code in a sandbox of its own, calling the program through this process.

Assert lines, setup, helpers and HumanEval `check` code arrive in the request, so they run
sandboxed like the program, but never in the program's sandbox: the comparisons must stay out
of the candidate's reach. This process relays frames between the two: a label sandbox's call frame goes
to the candidate's harness as it is, the candidate's reply goes back as it is, bounded in size
and never parsed here, so a candidate's huge or deeply nested reply costs this process neither
time under the GIL nor memory. Only the label sandbox's small verdict frame is decoded here.

A label sandbox serves one sample at a time, each in a fresh fork of its zygote (not dumpable:
its forks cannot write its memory), which kills every other process and empties the work dir
after the sample (harness.py). The zygote never reads a sample's frames (the label's code, the
checker's input, output and expected answer): the `sample` frame has it fork first, and the fork
reads them, so nothing of one sample is in the memory the next sample's fork starts from. It is
handed to the next sample only once its cgroup holds nothing but the zygote and the zygote
answered a fresh nonce (so no process of the sample is left to answer for it); after any
failure (timeout, death, a broken protocol) it is discarded. That saves a sandbox launch per
sample: half the cost of a test.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from services.reward_rules.code.backends.bwrap.pool import SandboxPool
from services.reward_rules.code.backends.bwrap.sandbox import (
    SAMPLE_OP,
    Sandbox,
    SandboxError,
    parse_frame,
    proven_clean,
)
from services.reward_rules.code.session import (
    CRASH,
    MEMORY,
    TIMEOUT,
    WRONG,
    CandidateFailure,
    Session,
    last_line,
    start_sandbox,
)

_CALL_PREFIX = b'{"op":"call",'  # how the label sandbox's harness writes a call (compact, op first)
_VERDICT_BYTES = 64 << 10
END_TIMEOUT_S = 5.0  # for the zygote to kill the sample's processes and empty its work dir
MAX_USES = 500  # samples a label sandbox serves before it is replaced anyway


@dataclass
class _Idle:
    sandbox: Sandbox
    uses: int
    baseline: int  # processes in its cgroup when only the zygote (and bwrap) run


class LabelRunPool:
    """Label sandboxes between samples: clean zygotes waiting for the next one."""

    def __init__(self, sandboxes: SandboxPool, keep: int) -> None:
        self.sandboxes = sandboxes
        self.keep = keep
        self._idle: list[_Idle] = []
        self._lock = threading.Lock()

    def acquire(self, memory_bytes: int) -> _Idle | None:
        """An idle label sandbox, its memory limit set to `memory_bytes`; None: start a fresh one."""
        with self._lock:
            idle = self._idle.pop() if self._idle else None
        if idle is not None:
            self.sandboxes.set_memory_limit(idle.sandbox, memory_bytes)
        return idle

    def fresh(self, memory_bytes: int) -> Sandbox:
        return self.sandboxes.acquire(memory_bytes)

    def give_back(self, idle: _Idle) -> None:
        with self._lock:
            if len(self._idle) < self.keep and idle.uses < MAX_USES:
                self._idle.append(idle)
                return
        self.sandboxes.release(idle.sandbox)

    def discard(self, sandbox: Sandbox) -> None:
        self.sandboxes.release(sandbox)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for run in idle:
            self.sandboxes.release(run.sandbox)


class LabelError(Exception):
    """The label's own code failed before touching the program (a bad label, not a verdict)."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""
    message: str = ""


class LabelRun:
    """One sample's label sandbox: loaded once, reused across tests until something fails."""

    def __init__(
        self, pool: LabelRunPool, memory_bytes: int, load: dict[str, Any], max_value_bytes: int
    ) -> None:
        self.pool = pool
        self.memory_bytes = memory_bytes
        self.load_message = load
        self.max_value_bytes = max_value_bytes
        self.sandbox: Sandbox | None = None
        self.uses = 0
        self.baseline = 0
        self._oom_before = 0

    def _start(self, deadline: float) -> Sandbox:
        """A label sandbox (idle, else fresh) whose zygote forked this sample's process (SAMPLE_OP)."""
        idle = self.pool.acquire(self.memory_bytes)
        if idle is not None:
            self.uses, self.baseline = idle.uses, idle.baseline
            self._oom_before = idle.sandbox.oom_kills()
            sandbox = idle.sandbox
        else:
            sandbox = start_sandbox(
                lambda: self.pool.fresh(self.memory_bytes), self.pool.discard, "label sandbox"
            )
            self.uses = 0
            self.baseline = len(sandbox.cgroup.pids_in()) if sandbox.cgroup is not None else 0
            self._oom_before = sandbox.oom_kills()
        self.sandbox = sandbox
        sandbox.send_raw(SAMPLE_OP, deadline)
        return sandbox

    def close(self, healthy: bool = True) -> None:
        """Ends the sample in the label sandbox; a label sandbox proven clean serves the next sample."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is None:
            return
        if healthy and self.baseline and self._reset(sandbox):
            self.pool.give_back(_Idle(sandbox, self.uses + 1, self.baseline))
        else:
            sandbox.kill()
            self.pool.discard(sandbox)

    def _reset(self, sandbox: Sandbox) -> bool:
        """Ends the sample's process and proves that only the zygote is left to answer.

        Anything the sample's code wrote on the pipe (a forged "ended", replies written ahead
        for the next sample) is read and dropped: only a pong carrying a nonce sent once the
        cgroup held nothing but the zygote counts, and nothing else then can have read it.
        """
        return proven_clean(sandbox, b'{"op":"end"}', self.baseline, self._oom_before, END_TIMEOUT_S)

    def run(self, message: dict[str, Any], candidate: Session, deadline: float) -> Verdict:
        """Runs one test (`{"op": "run", ...}`) against the loaded program by `deadline`."""
        try:
            if self.sandbox is None:
                self._start(deadline)
                loaded = self._exchange(self.load_message, candidate, deadline)
                if loaded.get("ended") is not None:  # the sample's process ended (os._exit in setup)
                    return self._judge_failed(SandboxError("died", "the test code exited"))
                if not loaded.get("ok"):
                    self.close()
                    return self._load_failed(loaded)
            reply = self._exchange(message, candidate, deadline)
        except CandidateFailure as exc:  # the program timed out, ran out of memory, died
            self.close(healthy=False)
            return Verdict(False, exc.reason, exc.message)
        except SandboxError as exc:
            return self._judge_failed(exc)
        if reply.get("ended") is not None:  # the test code ended its own process
            return self._judge_failed(SandboxError("died", "the test code exited"))
        if reply.get("done") is not True:
            self.close(healthy=False)
            return Verdict(False, CRASH, "the test code broke the label sandbox protocol")
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
        """The label sandbox stopped answering while testing this program: the program's values did it."""
        sandbox = self.sandbox
        assert sandbox is not None
        sandbox.kill()
        oom = sandbox.oom_kills() > self._oom_before
        stderr = last_line(bytes(sandbox.stderr_tail))
        self.close(healthy=False)
        if exc.kind == "timeout":
            return Verdict(False, TIMEOUT, "")
        if oom:
            return Verdict(False, MEMORY, f"{self.memory_bytes >> 20} MB (the test on the program's values)")
        return Verdict(False, CRASH, f"the test code died: {stderr or exc}")

    def _exchange(self, message: dict[str, Any], candidate: Session, deadline: float) -> dict[str, Any]:
        """Sends a request to the label sandbox, relays its calls to the program, returns its last reply."""
        sandbox = self.sandbox
        assert sandbox is not None
        body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode()
        sandbox.send_raw(body, deadline)
        while True:
            frame = sandbox.receive_raw(deadline, None)
            if not frame.startswith(_CALL_PREFIX):
                if len(frame) > _VERDICT_BYTES:
                    raise SandboxError("protocol", "verdict frame over the limit")
                return parse_frame(frame, "verdict")
            answer = candidate.relay(frame, deadline, self.max_value_bytes)
            sandbox.send_raw(answer, deadline)
