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
"""

from __future__ import annotations

import asyncio
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
        if self.settings.model:
            body["model"] = self.settings.model
        path = f"/{self.settings.endpoint}"
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
            data = reply.json()["data"]
            values = [_value(item, self.settings.endpoint) for item in sorted(data, key=lambda d: d["index"])]
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise BackendError(f"vLLM {path} reply not understood: {exc!r}: {reply.text[:300]}") from exc
        if len(values) != len(inputs):
            raise BackendError(f"vLLM {path} answered {len(values)} values for {len(inputs)} inputs")
        return values


def _value(item: dict[str, Any], endpoint: str) -> float:
    raw: Any = item["probs"] if endpoint == "classify" else item["data"]
    while isinstance(raw, list):
        if len(raw) != 1:
            raise ValueError(f"expected one value per input (num_labels 1), got {len(raw)}")
        raw = raw[0]
    return float(raw)  # a non-finite value fails its sample in the grader
