"""NeMo-Gym 0.4.0's own code against an Arbiter process serving its resources-server interface.

Requests are built with NeMo-Gym's pydantic models and sent with its HTTP client
(`ServerClient`, over its global aiohttp session); answers are validated with its
`BaseVerifyResponse` and `AggregateMetrics`, and /aggregate_metrics is compared with NeMo-Gym's
own `compute_aggregate_metrics` on the same verify responses. Then NeMo-Gym's `SimpleAgent` runs
whole rollouts (seed, policy turns, tool calls, verify) against Arbiter; the policy is the only
double: a canned Responses API model server, as no model can run here.

Runs in .venv-nemo (Python >= 3.12: scripts/nemo-venv.sh); Arbiter runs as its own process with
the main venv, the way a NeMo-Gym deployment meets it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ServiceProcess, free_port

pytestmark = pytest.mark.frameworks

nemo_gym = pytest.importorskip("nemo_gym", reason="runs in .venv-nemo (scripts/nemo-venv.sh, Python >= 3.12)")

ROOT = Path(__file__).resolve().parents[3]
ARBITER = "arbiter"  # the resources server's name in NeMo-Gym's config


@pytest.fixture(scope="module")
def arbiter_url() -> Iterator[str]:
    """reward_rules with episodes and the NeMo-Gym routes on (its math grader grades a reference)."""
    http, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBITER_")}
    env.update(
        {
            "ARBITER_REWARD_RULES__HOST": "127.0.0.1",
            "ARBITER_REWARD_RULES__HTTP_PORT": str(http),
            "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc),
            "ARBITER_EPISODES__NEMO_GYM__ENABLED": "true",
            "ARBITER_LOG__LEVEL": "WARNING",
        }
    )
    main = ROOT / ".venv" / "bin" / "python"
    python = str(main) if main.exists() else sys.executable
    url = f"http://127.0.0.1:{http}"
    with ServiceProcess(
        [python, "-m", "services.reward_rules"], f"{url}/readyz", env=env, start_timeout_s=120
    ):
        yield url


def _config(servers: dict[str, tuple[str, int]]) -> Any:
    """NeMo-Gym's global config: where each named server listens (name -> type -> instance)."""
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {name: {kind: {name: {"host": "127.0.0.1", "port": port}}} for name, (kind, port) in servers.items()}
    )


@asynccontextmanager
async def gym_client(arbiter_url: str, **more: tuple[str, int]) -> AsyncIterator[Any]:
    """NeMo-Gym's ServerClient, over its global aiohttp session (made here, in the test's loop,
    rather than from a NeMo-Gym config file)."""
    from nemo_gym import server_utils
    from nemo_gym.config_types import BaseServerConfig

    port = int(arbiter_url.rsplit(":", 1)[1])
    session = server_utils.set_global_aiohttp_client(server_utils.GlobalAIOHTTPAsyncClientConfig())
    try:
        yield server_utils.ServerClient(
            head_server_config=BaseServerConfig(host="127.0.0.1", port=free_port()),
            global_config_dict=_config({ARBITER: ("resources_servers", port), **more}),
        )
    finally:
        await session.close()
        server_utils._GLOBAL_AIOHTTP_CLIENT = None  # the next test's loop makes its own


def _message(text: str) -> Any:
    from nemo_gym.openai_utils import NeMoGymResponseOutputMessage, NeMoGymResponseOutputText

    return NeMoGymResponseOutputMessage(
        id="msg_1", content=[NeMoGymResponseOutputText(text=text, annotations=[])]
    )


def _response(*output: Any) -> Any:
    from nemo_gym.openai_utils import NeMoGymResponse

    return NeMoGymResponse(
        id="resp_1",
        created_at=0,
        model="policy",
        object="response",
        output=list(output),
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
    )


def _verify_request(text: str, **fields: Any) -> Any:
    from nemo_gym.base_resources_server import BaseVerifyRequest
    from nemo_gym.openai_utils import NeMoGymResponseCreateParamsNonStreaming
    from pydantic import ConfigDict

    class Request(BaseVerifyRequest):  # type: ignore[misc]  # as NeMo-Gym's servers subclass it, with their label fields
        model_config = ConfigDict(extra="allow")

    params = NeMoGymResponseCreateParamsNonStreaming(input=[{"role": "user", "content": "What is 6*7?"}])
    return Request(responses_create_params=params, response=_response(_message(text)), **fields)


async def _post(client: Any, path: str, body: Any, cookies: Any = None) -> Any:
    from nemo_gym.server_utils import get_response_json, raise_for_status

    answer = await client.post(server_name=ARBITER, url_path=path, json=body, cookies=cookies)
    await raise_for_status(answer)
    return await get_response_json(answer)


def test_verify_answers_nemo_gyms_verify_response(arbiter_url: str) -> None:
    from nemo_gym.base_resources_server import BaseVerifyResponse
    from pydantic import ConfigDict

    class Verified(BaseVerifyResponse):  # type: ignore[misc]
        model_config = ConfigDict(extra="allow")

    async def main() -> dict[str, Any]:
        async with gym_client(arbiter_url) as client:
            cases = {
                "right": _verify_request("6*7 = \\boxed{42}", expected_answer="42"),
                "wrong": _verify_request("\\boxed{41}", expected_answer="42"),
                "garbage": _verify_request("}{\\boxed{" * 40, expected_answer="42"),
                "forged": _verify_request("\\boxed{13}", expected_answer="42", reward=1.0, mask_sample=False),
                # a label naming no grader of this service: the dataset's fault, masked
                "bad label": _verify_request(
                    "\\boxed{42}", verifier_metadata={"grader": "nope", "label": "42"}
                ),
                "no label": _verify_request("\\boxed{42}"),
            }
            return {
                name: Verified.model_validate(await _post(client, "/verify", body))
                for name, body in cases.items()
            }

    got = asyncio.run(main())
    assert got["right"].reward == 1.0 and got["right"].mask_sample is False
    for name in ("wrong", "garbage", "forged"):
        assert got[name].reward == 0.0 and got[name].mask_sample is False, name
    for name in ("bad label", "no label"):
        assert got[name].mask_sample is True and got[name].arbiter_status == "INVALID_INPUT", name
    assert got["right"].response.output_text == "6*7 = \\boxed{42}"  # the Response echoed, as NeMo-Gym's own


def test_aggregate_metrics_equal_nemo_gyms_own(arbiter_url: str) -> None:
    from nemo_gym.config_types import AggregateMetrics, AggregateMetricsRequest
    from nemo_gym.reward_profile import compute_aggregate_metrics

    responses: list[dict[str, Any]] = [
        {"_ng_task_index": t, "_ng_rollout_index": r, "reward": float((t + r) % 2), "mask_sample": r == 2}
        for t in range(3)
        for r in range(4)
    ]
    responses[5]["response"] = {"usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}}
    responses[6]["arbiter_score"] = 0.5
    lone = [{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0}]

    async def main() -> list[Any]:
        async with gym_client(arbiter_url) as client:
            return [
                AggregateMetrics.model_validate(
                    await _post(client, "/aggregate_metrics", AggregateMetricsRequest(verify_responses=given))
                )
                for given in (responses, lone, [])
            ]

    for given, ours in zip((responses, lone, []), asyncio.run(main()), strict=True):
        theirs = compute_aggregate_metrics(given)
        assert ours.key_metrics == pytest.approx(theirs.key_metrics)
        assert ours.agent_metrics == pytest.approx(theirs.agent_metrics)
        assert len(ours.group_level_metrics) == len(theirs.group_level_metrics)
        for mine, reference in zip(ours.group_level_metrics, theirs.group_level_metrics, strict=True):
            assert set(mine) == set(reference)
            numbers = {k: v for k, v in reference.items() if isinstance(v, int | float)}
            assert {k: mine[k] for k in numbers} == pytest.approx(numbers)
            assert (
                mine["rollout_infos"] == reference["rollout_infos"] and mine["sample"] == reference["sample"]
            )


def _canned_policy(turns: list[Callable[[], list[Any]]]) -> Any:
    """A Responses API model server answering canned outputs in turn: the policy's double."""
    from fastapi import FastAPI

    app = FastAPI()
    calls: list[Any] = []

    @app.post("/v1/responses")
    async def responses(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(body)
        output = turns[(len(calls) - 1) % len(turns)]()  # each rollout takes the turns in order
        return _response(*output).model_dump(mode="json")  # type: ignore[no-any-return]

    app.state.calls = calls
    return app


@asynccontextmanager
async def _serving(app: Any, port: int) -> AsyncIterator[None]:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # uvicorn offers a flag, no event
        if task.done():
            task.result()  # it failed to start: raise why
            raise RuntimeError(f"uvicorn on port {port} stopped before it started")
        await asyncio.sleep(0.05)
    try:
        yield
    finally:
        server.should_exit = True
        await task


def test_simple_agent_rollouts_with_arbiter_tools_and_rewards(arbiter_url: str) -> None:
    """NeMo-Gym's SimpleAgent: /run seeds a session on Arbiter, loops the policy, sends its
    function calls to Arbiter's tool route (the code runs in the session's episode), then
    verifies; the tool output the policy saw is the interpreter's."""
    from nemo_gym.config_types import ModelServerRef, ResourcesServerRef
    from nemo_gym.openai_utils import NeMoGymResponseFunctionToolCall
    from responses_api_agents.simple_agent.app import (
        SimpleAgent,
        SimpleAgentConfig,
        SimpleAgentVerifyResponse,
    )

    def call(code: str, call_id: str) -> Callable[[], list[Any]]:
        arguments = json.dumps({"code": code})
        return lambda: [NeMoGymResponseFunctionToolCall(name="python", arguments=arguments, call_id=call_id)]

    policy_port, agent_port = free_port(), free_port()
    right = _canned_policy(
        [call("x = 6 * 7\nprint(x)", "c1"), call("x + 1", "c2"), lambda: [_message("So \\boxed{42}.")]]
    )
    row = {
        "responses_create_params": {
            "input": [{"role": "user", "content": "What is 6*7? Use the python tool."}],
            "tools": [
                {
                    "type": "function",
                    "name": "python",
                    "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
                    "strict": False,
                }
            ],
        },
        "expected_answer": "42",
        "environment": "python_tool",
    }

    async def main() -> tuple[Any, Any]:
        servers = {
            "policy": ("responses_api_models", policy_port),
            "agent": ("responses_api_agents", agent_port),
        }
        async with gym_client(arbiter_url, **servers) as client:
            config = SimpleAgentConfig(
                host="127.0.0.1",
                port=agent_port,
                entrypoint="app.py",
                name="agent",
                resources_server=ResourcesServerRef(type="resources_servers", name=ARBITER),
                model_server=ModelServerRef(type="responses_api_models", name="policy"),
                max_steps=6,
            )
            agent = SimpleAgent(config=config, server_client=client)
            async with _serving(right, policy_port), _serving(agent.setup_webserver(), agent_port):
                first = await client.post(server_name="agent", url_path="/run", json=row)
                first_json = await first.json()
                assert first.status == 200, first_json
                wrong = {**row, "expected_answer": "43"}
                second = await client.post(server_name="agent", url_path="/run", json=wrong)
                second_json = await second.json()
                assert second.status == 200, second_json
        return SimpleAgentVerifyResponse.model_validate(first_json), SimpleAgentVerifyResponse.model_validate(
            second_json
        )

    first, second = asyncio.run(main())
    outputs = [
        json.loads(item.output) for item in first.response.output if item.type == "function_call_output"
    ]
    assert outputs == [{"output": "<output>\n42\n</output>\n"}, {"output": "<output>\n43\n</output>\n"}]
    assert first.reward == 1.0 and first.mask_sample is False
    logs = first.arbiter_logs
    assert logs["episode/tool_calls"] == 2 and logs["nemo_gym/tool_calls_run"] == 2
    assert second.reward == 0.0 and second.mask_sample is False
    assert len(right.state.calls) == 6  # three policy turns per rollout
