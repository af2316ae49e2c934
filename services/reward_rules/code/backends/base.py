"""What a session needs of a sandbox and of the source that hands sandboxes out."""

from __future__ import annotations

from typing import Any, Protocol


class SandboxLike(Protocol):
    """A running sandbox: the local bwrap (or unsafe) one or a remote SandboxFusion one."""

    stderr_tail: bytearray
    stderr_bytes: int

    def wait_ready(self, deadline: float) -> None: ...

    def request(
        self, message: dict[str, Any], deadline: float, max_reply: int | None = None
    ) -> dict[str, Any]: ...

    def request_raw(self, body: bytes, deadline: float, max_reply: int | None = None) -> bytes: ...

    def kill(self) -> None: ...

    def oom_kills(self) -> int: ...

    def stderr_text(self) -> str: ...


class SandboxSource(Protocol):
    """Hands out sandboxes and takes back the ones it handed out (and only those)."""

    def acquire(self, memory_bytes: int) -> SandboxLike: ...

    def set_memory_limit(self, sandbox: SandboxLike, memory_bytes: int) -> None: ...

    def release(self, sandbox: SandboxLike) -> None: ...

    def close(self) -> None: ...
