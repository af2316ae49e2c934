"""A small real HTTP server speaking vLLM's pooling API (/classify, /pooling), for the adapter tests.

It runs the HF reference model on the token ids it receives, one unpadded input at a
time, reading the last token as vLLM does; like vLLM it applies the pooler's
logit_mean/logit_sigma and, unless `use_activation` is false, a sigmoid. It records what
it saw (bodies, peak concurrency, client connections) and can be told to fail. With a
`token_reference` (a process reward model), `/pooling` with task `token_classify` answers every
token's logits (softmax-ed unless `use_activation` is false).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.transports.server import AsgiServer
from tests.reward_rm.reference import Reference


class FakeVLLM:
    def __init__(
        self,
        reference: Reference,
        model: str = "rm",
        logit_mean: float | None = None,
        logit_sigma: float | None = None,
        latency_s: float = 0.02,
        token_reference: Any = None,
    ) -> None:
        self.reference = reference
        self.token_reference = token_reference
        self.model = model
        self.logit_mean, self.logit_sigma = logit_mean, logit_sigma
        self.latency_s = latency_s
        self.fail_with = 0  # an HTTP status to answer instead of results
        self.bodies: list[dict[str, Any]] = []
        self.clients: set[tuple[str, int]] = set()
        self.inflight = 0
        self.peak_inflight = 0
        self.port = 0
        self._http: AsgiServer | None = None
        self.app = Starlette(
            routes=[
                Route("/classify", self._classify, methods=["POST"]),
                Route("/pooling", self._pooling, methods=["POST"]),
            ]
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeVLLM:
        self._http = AsgiServer(self.app)
        await self._http.start()
        self.port = self._http.port
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.stop()

    async def _classify(self, request: Request) -> Response:
        return await self._answer(request, "classify")

    async def _pooling(self, request: Request) -> Response:
        return await self._answer(request, "pooling")

    async def _answer(self, request: Request, endpoint: str) -> Response:
        body = await request.json()
        self.bodies.append(body)
        if request.client is not None:
            self.clients.add((request.client.host, request.client.port))
        self.inflight += 1
        self.peak_inflight = max(self.peak_inflight, self.inflight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.inflight -= 1
        if self.fail_with:
            return JSONResponse({"error": {"message": "engine dead", "code": self.fail_with}}, self.fail_with)
        if body.get("model") not in (None, self.model):
            return JSONResponse({"error": {"message": f"model {body['model']} not served"}}, 404)
        inputs = body["input"]
        if not (isinstance(inputs, list) and all(isinstance(i, list) for i in inputs)):
            return JSONResponse({"error": {"message": "this fake takes token id lists only"}}, 400)
        data: list[dict[str, Any]] = []
        if body.get("task") == "token_classify":
            if self.token_reference is None:
                return JSONResponse({"error": {"message": "not a token classification model"}}, 400)
            for index, ids in enumerate(inputs):
                rows = self.token_reference.token_logits(ids)
                if body.get("use_activation") is not False:
                    rows = [_softmax(row) for row in rows]
                data.append({"index": index, "object": "pooling", "data": rows})
            data.reverse()
            return JSONResponse({"model": self.model, "data": data})
        for index, ids in enumerate(inputs):
            value = self.reference.reward_of_ids(ids)
            if self.logit_mean is not None:
                value -= self.logit_mean
            if self.logit_sigma is not None:
                value /= self.logit_sigma
            if body.get("use_activation") is not False:
                value = 1 / (1 + math.exp(-value))
            if endpoint == "classify":
                data.append({"index": index, "label": "LABEL_0", "probs": [value], "num_classes": 1})
            else:
                data.append({"index": index, "object": "pooling", "data": [value]})
        data.reverse()  # the adapter must order by index, not trust arrival order
        return JSONResponse({"model": self.model, "data": data})


def _softmax(row: list[float]) -> list[float]:
    top = max(row)
    weights = [math.exp(v - top) for v in row]
    return [w / sum(weights) for w in weights]
