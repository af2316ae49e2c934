"""The vLLM backend: an adapter over a vLLM pooling server (`--runner pooling`).

Token ids go over the wire (the grader tokenized and truncated them, so both backends
read exactly the same tokens); `/classify` with `use_activation: false` answers the raw
head value (`data[i].probs[0]`), `/pooling` with task classify the same in `data[i].data`.
vLLM batches continuously on its side, so a grader batch is cut into small requests sent
at once over one keep-alive connection pool.

A kept-alive connection can be closed by the server just as a request goes out on it (the
client cannot see that coming): idle connections are let go well before vLLM's own keep-alive
(uvicorn's 5 s) would close them, and a request whose connection broke before any answer is
sent once more on a fresh one. Scoring is idempotent, and a whole batch's rewards would
otherwise be fallbacks for a race in the transport.

A process reward model goes through `/pooling` with task `token_classify` and
`use_activation: false`: the server answers every token's raw logits, the adapter keeps the
step separators' positions and turns them into P(step is good) itself (softmax over two labels,
sigmoid of one), the same arithmetic as the transformers backend.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import httpx

from services.common.settings import UPSTREAM_KEEPALIVE_S
from services.reward_rm.backends.base import BackendError
from services.reward_rm.settings import VLLMSettings

# A connection that broke before any answer: stale (closed by the server) or the server restarted.
_BROKEN = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class VLLMBackend:
    def __init__(self, settings: VLLMSettings, normalized: bool) -> None:
        self.settings = settings
        self._normalized = normalized
        self._client: httpx.AsyncClient | None = None

    @property
    def name(self) -> str:
        return "vllm"

    @property
    def normalized(self) -> bool:
        return self._normalized

    async def start(self) -> None:
        self._http()

    async def rewards(self, inputs: Sequence[Sequence[int]]) -> list[float]:
        size = self.settings.request_size
        chunks = [list(inputs[i : i + size]) for i in range(0, len(inputs), size)]
        answers = await asyncio.gather(*(self._request([list(ids) for ids in chunk]) for chunk in chunks))
        return [value for answer in answers for value in answer]

    async def step_scores(
        self, inputs: Sequence[Sequence[int]], positions: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        size = self.settings.request_size
        chunks = [
            ([list(ids) for ids in inputs[i : i + size]], [list(at) for at in positions[i : i + size]])
            for i in range(0, len(inputs), size)
        ]
        answers = await asyncio.gather(*(self._token_request(ids, at) for ids, at in chunks))
        return [scores for answer in answers for scores in answer]

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(
                max_connections=self.settings.max_connections,
                max_keepalive_connections=self.settings.max_connections,
                keepalive_expiry=UPSTREAM_KEEPALIVE_S,
            )
            self._client = httpx.AsyncClient(
                base_url=self.settings.url.rstrip("/"),
                limits=limits,
                timeout=httpx.Timeout(self.settings.timeout_s, connect=10.0),
            )
        return self._client

    async def _request(self, inputs: list[list[int]]) -> list[float]:
        body: dict[str, Any] = {"input": inputs, "use_activation": False}
        if self.settings.endpoint == "pooling":
            body["task"] = "classify"
        path = f"/{self.settings.endpoint}"
        data = await self._post(path, body, len(inputs))
        try:
            return [_value(item, self.settings.endpoint) for item in data]
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise BackendError(f"vLLM {path} reply not understood: {exc!r}") from exc

    async def _token_request(self, inputs: list[list[int]], positions: list[list[int]]) -> list[list[float]]:
        body: dict[str, Any] = {"input": inputs, "task": "token_classify", "use_activation": False}
        data = await self._post("/pooling", body, len(inputs))
        try:
            out: list[list[float]] = []
            for item, ids, at in zip(data, inputs, positions, strict=True):
                rows = item["data"]
                if len(rows) != len(ids):
                    raise ValueError(f"{len(rows)} token outputs for {len(ids)} tokens")
                out.append([_step_probability(rows[p]) for p in at])
            return out
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise BackendError(f"vLLM /pooling (token_classify) reply not understood: {exc!r}") from exc

    async def _post(self, path: str, body: dict[str, Any], count: int) -> list[dict[str, Any]]:
        """The reply's `data`, ordered by index, one per input; BackendError otherwise."""
        if self.settings.model:
            body["model"] = self.settings.model
        try:
            try:
                reply = await self._http().post(path, json=body)
            except _BROKEN:
                reply = await self._http().post(path, json=body)  # once more, on a fresh connection
        except httpx.HTTPError as exc:
            raise BackendError(f"vLLM server {self.settings.url}{path} unreachable: {exc!r}") from exc
        if reply.status_code != 200:
            raise BackendError(f"vLLM {path} answered {reply.status_code}: {reply.text[:300]}")
        try:
            data: list[dict[str, Any]] = sorted(reply.json()["data"], key=lambda d: d["index"])
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise BackendError(f"vLLM {path} reply not understood: {exc!r}: {reply.text[:300]}") from exc
        if len(data) != count:
            raise BackendError(f"vLLM {path} answered {len(data)} values for {count} inputs")
        return data


def _value(item: dict[str, Any], endpoint: str) -> float:
    raw: Any = item["probs"] if endpoint == "classify" else item["data"]
    while isinstance(raw, list):
        if len(raw) != 1:
            raise ValueError(f"expected one value per input (num_labels 1), got {len(raw)}")
        raw = raw[0]
    return float(raw)  # a non-finite value fails its sample in the grader


def _step_probability(row: Any) -> float:
    """P(step is good) from one token's raw logits: softmax's label 1 of two, sigmoid of one."""
    logits = [float(v) for v in row] if isinstance(row, list) else [float(row)]
    if len(logits) == 1:
        z = logits[0]
    elif len(logits) == 2:
        z = logits[1] - logits[0]  # softmax([a, b])[1] == sigmoid(b - a)
    else:
        raise ValueError(f"expected one or two labels per token, got {len(logits)}")
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
