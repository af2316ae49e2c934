"""The `POST /run_code` route of reward_rules: SandboxFusion's API over HTTP.

The semantics (limits, files, queueing, verdicts) are code/run_code.py's; this module only turns
requests into `FusionRunner.serve` calls and answers into JSON, so the grader package never sees
a web framework.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from services.reward_rules.code.run_code import FusionRunner, RunCodeRequest, code_grader_of, sandbox_error
from services.scoring.grader import Grader
from services.transports.auth import PathTokenRouter
from services.transports.http_app import unless_disconnected


def caller_of(request: Request) -> str:
    """Whose request this is, for fair shares: the X-Arbiter-Caller header, else the client address."""
    named = request.headers.get("x-arbiter-caller")
    if named:
        return "name:" + named[:128]
    return "addr:" + (request.client.host if request.client is not None else "")


class FusionRouter(PathTokenRouter):
    """The `/run_code` routes, and the runner behind them (None: the service has no code grader)."""

    runner: FusionRunner | None = None


def fusion_router(grader: Grader) -> APIRouter:
    """`POST /run_code` (SandboxFusion's), backed by `grader`'s code sandboxes; also as
    `POST /run_code/<token>` for a service with a token (veRL sends no Authorization header: its
    URL carries the token; the kit's middleware checks it, as it checks the header elsewhere)."""
    router = FusionRouter(token_prefix="/run_code/")
    code = code_grader_of(grader)
    runner = router.runner = FusionRunner(code) if code is not None else None

    async def run_code(body: RunCodeRequest, request: Request) -> JSONResponse:
        if runner is None:
            return JSONResponse(sandbox_error("this service has no code sandbox (see its log)"))
        answer = await unless_disconnected(request.receive, runner.serve(body, caller_of(request)))
        if answer is None:  # the caller hung up: its run was killed
            return JSONResponse({"detail": "the client closed the connection"}, status_code=499)
        return JSONResponse(answer.body, status_code=answer.status)

    router.add_api_route("/run_code", run_code, methods=["POST"])
    router.add_api_route("/run_code/{token}", run_code, methods=["POST"], include_in_schema=False)
    return router
