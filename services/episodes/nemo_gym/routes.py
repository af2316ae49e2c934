"""The NeMo-Gym resources-server routes: POST /seed_session, /verify, /aggregate_metrics,
/close_session and /<tool_name>, served beside the episode API (same auth, limits and ports).

A body that is not a JSON object with the fields NeMo-Gym always sends (`responses_create_params`
and `response` for /verify, `verify_responses` for /aggregate_metrics) is a 422, as NeMo-Gym's own
servers answer; everything about the sample is in a 200 answer (reward, `mask_sample`). The
session cookie is set on every answer of a session, as NeMo-Gym's session middleware does.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from services.episodes.nemo_gym.facade import NemoGymFacade, ToolError
from services.episodes.nemo_gym.metrics import MetricsError, aggregate
from services.episodes.nemo_gym.sessions import COOKIE, Session


def _json(content: Any, status_code: int = 200, session: Session | None = None) -> Response:
    answer = Response(orjson.dumps(content), status_code=status_code, media_type="application/json")
    if session is not None:
        answer.set_cookie(COOKIE, session.id, httponly=True, samesite="lax")
    return answer


def _problem(detail: str, status_code: int = 422) -> Response:
    return _json({"detail": detail}, status_code)


async def _object(request: Request) -> dict[str, Any] | None:
    try:
        body = orjson.loads(await request.body() or b"{}")
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else None


def nemo_gym_router(facade: NemoGymFacade) -> APIRouter:
    router = APIRouter()

    @router.post("/seed_session")
    async def seed_session(request: Request) -> Response:
        body = await _object(request)
        if body is None:
            return _problem("the body must be a JSON object")
        session, answer = await facade.seed(request.cookies.get(COOKIE), body)
        return _json(answer, session=session)

    @router.post("/verify")
    async def verify(request: Request) -> Response:
        body = await _object(request)
        if body is None:
            return _problem("the body must be a JSON object")
        for name in ("responses_create_params", "response"):
            if not isinstance(body.get(name), dict):
                return _problem(f"`{name}` must be an object (NeMo-Gym's BaseVerifyRequest)")
        session_id = request.cookies.get(COOKIE)
        answer = await facade.verify(session_id, body)
        return _json(answer, session=facade.sessions.get(session_id))

    @router.post("/aggregate_metrics")
    async def aggregate_metrics(request: Request) -> Response:
        body = await _object(request)
        responses = body.get("verify_responses") if body is not None else None
        if not isinstance(responses, list) or not all(isinstance(item, dict) for item in responses):
            return _problem("`verify_responses` must be a list of objects (AggregateMetricsRequest)")
        try:
            return _json(aggregate(responses))
        except MetricsError as exc:
            return _problem(str(exc))

    @router.post("/close_session")
    async def close_session(request: Request) -> Response:
        answer = _json(await facade.close(request.cookies.get(COOKIE)))
        answer.delete_cookie(COOKIE)
        return answer

    @router.post(f"/{facade.settings.tool_name}")
    async def tool(request: Request) -> Response:
        session_id = request.cookies.get(COOKIE)
        try:
            answer = await facade.tool(session_id, await _object(request))
        except ToolError as exc:
            return _problem(str(exc), 400)
        return _json(answer, session=facade.sessions.get(session_id))

    return router
