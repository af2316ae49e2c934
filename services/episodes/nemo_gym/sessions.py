"""NeMo-Gym sessions: one per rollout, named by a cookie, optionally bound to an episode.

NeMo-Gym's agent posts /seed_session, keeps the cookies of the answer and sends them with every
tool call and with /verify (its servers keep the id in a signed Starlette session cookie; any
cookie round-trips). Arbiter's cookie holds a random 192-bit id: unguessable, so a rollout
cannot reach another's session, and nothing to sign.

A session lives in the worker process that seeded it, as episodes do: bounded (`max_sessions`,
least recently used first out) and forgotten after `session_idle_ttl_s` untouched. The facade
finishes the episode of a session it drops.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from arbiter.contract import Status

COOKIE = "arbiter_nemo_gym_session"


@dataclass(eq=False)
class Session:
    id: str
    touched: float
    episode_id: str = ""  # "" when the session opened no episode
    turn: int = 0  # the next step's turn in the episode
    max_turns: int = 0  # the episode's turn limit (its last turn would be graded as the answer)
    done: bool = False  # the episode ended: no more tool calls run
    tool_calls: int = 0  # tool calls run in the episode
    failure: tuple[Status, str] | None = None  # the first infrastructure failure the rollout met
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def fail(self, status: Status, detail: str) -> None:
        if self.failure is None:
            self.failure = (status, detail)


class SessionStore:
    def __init__(self, max_sessions: int, idle_ttl_s: float) -> None:
        self.max_sessions = max_sessions
        self.idle_ttl_s = idle_ttl_s
        self.held: OrderedDict[str, Session] = OrderedDict()

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self.held.get(session_id)
        if session is None:
            return None
        session.touched = time.monotonic()
        self.held.move_to_end(session_id)
        return session

    def new(self) -> tuple[Session, list[Session]]:
        """A fresh session, and the sessions dropped to make room or because they idled out."""
        now = time.monotonic()
        dropped = self.expire(now)
        while len(self.held) >= self.max_sessions:
            dropped.append(self.held.popitem(last=False)[1])
        session = Session(id=secrets.token_urlsafe(24), touched=now)
        self.held[session.id] = session
        return session, dropped

    def pop(self, session_id: str | None) -> Session | None:
        return self.held.pop(session_id, None) if session_id else None

    def expire(self, now: float | None = None) -> list[Session]:
        now = time.monotonic() if now is None else now
        dropped = []
        while self.held:
            oldest = next(iter(self.held.values()))
            if now - oldest.touched < self.idle_ttl_s:
                break
            dropped.append(self.held.popitem(last=False)[1])
        return dropped

    def drain(self) -> list[Session]:
        dropped = list(self.held.values())
        self.held.clear()
        return dropped
