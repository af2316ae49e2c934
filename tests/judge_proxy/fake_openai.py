"""A small real chat-completions server for the judge's tests and bench (`/v1/chat/completions`).

Behaviour comes from the server's `behaviour` dict, overridden per request by a directive
anywhere in the messages: `<<fake:{"score": 8, "delay": 0.2}>>` (the first one found).
Keys:
  score: N           reply "… Rating: [[N]]"            label: L     reply "… Verdict: [[L]]"
                     (a request with a verdict code also gets a last line "VERDICT-<code>: [[N]]",
                     as a judge that follows the request does; `unmarked: true` leaves it out)
  reply: TEXT        reply exactly TEXT ("<code>" in it becomes the request's verdict code)
  delay: S           sleep S seconds first
  status: CODE       answer HTTP CODE (with retry_after: S as Retry-After) ...
  times: K           ... only for the first K requests with this directive (by `id`, else its text)
  hang: true         never answer (released when the server stops)
  refuse: true       a refusal in the text; refusal_field: true puts it in message.refusal instead
  malformed: "json"  a 200 whose body is not JSON; "no_choices": JSON without choices
  logprobs: {tok: lp} top_logprobs at the verdict's token (every token carries logprobs when asked)
  prefer: M, over: N  pairwise: "[[A]]" when M appears before N in the request, else "[[B]]"
  always: "A"        pairwise with pure position bias
  quote: "before"|"after"  the reply quotes the (first fenced) answer before or after its own verdict
  finish: "length"   the reply's finish_reason (a reply cut at max_tokens)
  error: TEXT        the error message of a scripted status
  gone: true         wait (delay) watching the client: a request the client abandons is counted
Counters: `requests` (every body and its Authorization header), `count`, `by_key`, `peak_inflight`,
`arrivals`, `abandoned` (requests whose client left before the answer).
Runs in-process (`async with FakeOpenAI() as fake`) or as `python -m tests.judge_proxy.fake_openai`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from services.transports.http_app import Receive, Scope, Send, read_body
from services.transports.server import AsgiServer

DIRECTIVE = re.compile(r"<<fake:(\{.*?\})>>", re.DOTALL)
FENCED = re.compile(r"<<<answer-(\w+)>>>\n(.*?)\n<<<end-answer-\1>>>", re.DOTALL)
_TOKEN = re.compile(r"\d|[A-Za-z]+|\s+|[^\w\s]")
CODE = re.compile(r"The verdict code of this request is (\w+)\.")


def directive(**behaviour: Any) -> str:
    """The text that scripts the fake for the request it ends up in."""
    return f"<<fake:{json.dumps(behaviour, sort_keys=True)}>>"


@dataclass
class Seen:
    body: dict[str, Any]
    authorization: str


class FakeOpenAI:
    def __init__(self, latency_s: float = 0.0, model: str = "fake-judge", **behaviour: Any) -> None:
        self.latency_s = latency_s
        self.model = model
        self.behaviour: dict[str, Any] = dict(behaviour)
        self.requests: list[Seen] = []
        self.count = 0
        self.by_key: collections.Counter[str] = collections.Counter()
        self.inflight = 0
        self.peak_inflight = 0
        self.arrivals: list[float] = []  # time.monotonic() of every request
        self.abandoned = 0
        self.keep_bodies = True
        self.port = 0
        self._stopping = asyncio.Event()
        self._http: AsgiServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        self.requests.clear()
        self.count = 0
        self.by_key.clear()

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self, port: int = 0) -> None:
        self._http = AsgiServer(self.app, port=port, timeout_graceful_shutdown=1)
        await self._http.start()
        self.port = self._http.port

    async def stop(self) -> None:
        self._stopping.set()
        if self._http is not None:
            await self._http.stop()

    # -- the endpoint (raw ASGI: a framework's routing cost the bench's machine CPU per request) --

    @property
    def app(self) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
        """The ASGI app: a plain coroutine function, which servers detect as ASGI 3 (a bound method
        they take for ASGI 2)."""

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            await self._serve(scope, receive, send)

        return app

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        route = (scope["method"], scope["path"])
        if route == ("POST", "/v1/chat/completions"):
            body = await read_body(receive) or b""
            status, payload, extra = await self._chat(body, dict(scope["headers"]), receive)
        elif route == ("GET", "/stats"):
            status, payload, extra = 200, _json({"count": self.count, "by_key": dict(self.by_key)}), {}
        else:
            status, payload, extra = 404, _json({"error": {"message": "not found"}}), {}
        head = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        head += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": payload})

    async def _chat(
        self, raw: bytes, headers: dict[bytes, bytes], receive: Receive
    ) -> tuple[int, bytes, dict[str, str]]:
        self.arrivals.append(time.monotonic())
        self.inflight += 1
        self.peak_inflight = max(self.peak_inflight, self.inflight)
        try:
            return await self._answer(raw, headers, receive)
        finally:
            self.inflight -= 1

    async def _answer(
        self, raw: bytes, headers: dict[bytes, bytes], receive: Receive
    ) -> tuple[int, bytes, dict[str, str]]:
        body = orjson.loads(raw)
        self.count += 1
        if self.keep_bodies:
            self.requests.append(Seen(body, headers.get(b"authorization", b"").decode("latin-1")))
        text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        found = DIRECTIVE.search(text)
        script = dict(self.behaviour)
        key = "-"
        if found is not None:
            script.update(json.loads(found.group(1)))
            key = str(script.get("id", found.group(1)))
        self.by_key[key] += 1
        delay = self.latency_s + float(script.get("delay", 0.0))
        if delay and script.get("gone"):
            if await _client_left(receive, delay):
                self.abandoned += 1
                return 499, b"", {}
        elif delay:
            await asyncio.sleep(delay)
        if script.get("hang"):
            await self._stopping.wait()
            return 503, b"", {}
        if "status" in script and self.by_key[key] <= int(script.get("times", 1 << 30)):
            extra = {"retry-after": str(script["retry_after"])} if "retry_after" in script else {}
            message = str(script.get("error", f"scripted {script['status']}"))
            return int(script["status"]), _json({"error": {"message": message}}), extra
        if script.get("malformed") == "json":
            return 200, b"<html>bad gateway</html>", {}
        if script.get("malformed") == "no_choices":
            return 200, _json({"object": "chat.completion", "model": self.model}), {}
        return 200, _json(self._completion(body, text, script)), {}

    def _completion(self, body: dict[str, Any], text: str, script: dict[str, Any]) -> dict[str, Any]:
        content, verdict = self._reply(text, script)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = str(script.get("finish", "stop"))
        if script.get("refuse") and script.get("refusal_field"):
            message = {"role": "assistant", "content": None, "refusal": content}
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        tokens = list(_TOKEN.finditer(content or ""))
        if body.get("logprobs") and content:
            alternatives = script.get("logprobs") or {}
            at = content.rfind(verdict) if verdict else -1
            entries = []
            for token in tokens:
                top = [{"token": token.group(0), "logprob": 0.0}]
                logprob = 0.0
                if token.start() == at and alternatives:
                    top = [{"token": t, "logprob": lp} for t, lp in alternatives.items()]
                    logprob = float(alternatives.get(token.group(0), max(alternatives.values())))
                entries.append({"token": token.group(0), "logprob": logprob, "top_logprobs": top})
            choice["logprobs"] = {"content": entries}
        prompt_tokens = len(text) // 4 + 1
        return {
            "id": f"chatcmpl-{self.count}",
            "object": "chat.completion",
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(tokens),
                "total_tokens": prompt_tokens + len(tokens),
            },
        }

    @classmethod
    def _reply(cls, text: str, script: dict[str, Any]) -> tuple[str, str]:
        content, verdict = cls._verdict(text, script)
        codes = CODE.findall(text)  # the request's own code is the last one (its final words)
        if codes and "reply" in script:
            content = content.replace("<code>", codes[-1])
        elif codes and verdict and not script.get("unmarked"):
            content = f"{content}\nVERDICT-{codes[-1]}: [[{verdict}]]"
        if "quote" in script:
            fenced = FENCED.search(text)
            answer = DIRECTIVE.sub("", fenced.group(2) if fenced else text)
            quoted = f'The answer under review says: "{answer}".'
            content = f"{quoted} {content}" if script["quote"] == "before" else f"{content} {quoted}"
        return content, verdict

    @staticmethod
    def _verdict(text: str, script: dict[str, Any]) -> tuple[str, str]:
        if script.get("refuse"):
            return "I'm sorry, but I can't help with evaluating this conversation.", ""
        if "reply" in script:
            return str(script["reply"]), ""
        if "always" in script:
            label = str(script["always"])
            return f"Both are fine. [[{label}]]", label
        if "prefer" in script:
            text = DIRECTIVE.sub("", text)
            first, other = text.find(str(script["prefer"])), text.find(str(script.get("over", "")))
            label = "A" if other < 0 or 0 <= first < other else "B"
            return f"One answer is better. [[{label}]]", label
        if "label" in script:
            return f"Reasoning done. Verdict: [[{script['label']}]]", str(script["label"])
        score = script.get("score", 7)
        return f"The response is adequate. Rating: [[{score}]]", str(score)


def _json(value: Any) -> bytes:
    return orjson.dumps(value)


async def _client_left(receive: Receive, delay: float) -> bool:
    """Wait `delay`, watching for the client to go away; True when it did."""
    try:
        async with asyncio.timeout(delay):
            while (await receive())["type"] != "http.disconnect":
                pass
    except TimeoutError:
        return False
    return True


async def _serve(port: int, latency_s: float) -> None:
    fake = FakeOpenAI(latency_s=latency_s)
    fake.keep_bodies = False
    await fake.start(port)
    print(f"READY {fake.port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await fake.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.run(_serve(args.port, args.latency))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
