"""Steps whose tool calls the caller already parsed (`tool_code`), or that are the final answer
(`final`): frameworks with their own tool-call parsers (veRL, TRL) say which a turn is, so code in
a final answer is graded, not run, and plain code is run without being wrapped in a fence."""

from __future__ import annotations

import json
from typing import Any

import grpc

from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.dispatch import RulesGrader
from tests.episodes.helpers import BoxedGrader, served


async def _step(client: Any, episode: str, turn: int, action: str = "", **more: Any) -> dict[str, Any]:
    body = {"episode_id": episode, "turn": turn, "action": action, **more}
    answer = await client.post("/v1/episodes/step", json=body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def test_tool_code_runs_as_given_and_final_grades_whatever_it_holds() -> None:
    grader = BoxedGrader()
    async with served(grader=grader) as (_, client):
        start = await client.post(
            "/v1/episodes/start", json={"episode_id": "s", "environment": "python_tool", "label": "42"}
        )
        assert start.json()["max_turns"] == 8  # the environment's limit, for the caller to plan by
        first = await _step(client, "s", 0, "I will compute.", tool_code=["x = 6 * 7", "print(x)"])
        assert first["status"] == "OK" and not first["done"] and "42" in first["feedback"], first
        again = await _step(client, "s", 0, "I will compute.", tool_code=["x = 6 * 7", "print(x)"])
        assert again == first  # a retry: the stored answer, the cells did not run twice
        other = await _step(client, "s", 0, "I will compute.", tool_code=["print(1)"])
        assert other["status"] == "INVALID_INPUT" and other["logs"]["episode/failed"] == 1
        # A final answer that holds a fenced block is graded, not run.
        answer = "Check:\n```python\nprint(x)\n```\nSo \\boxed{42}."
        final = await _step(client, "s", 1, answer, final=True)
        assert final["done"] and final["reward"] == 1.0 and final["feedback"] == "", final
        assert grader.graded == [answer]
        stats = (await client.get("/v1/episodes/stats")).json()
        assert (stats["started"], stats["steps"]) == (1, 2)
        finished = (await client.post("/v1/episodes/finish", json={"episode_id": "s"})).json()
        assert finished["reward"] == 1.0 and finished["logs"]["episode/tool_calls"] == 2
        assert (await client.get("/v1/episodes/stats")).json()["finished"] == 1


async def test_tool_calls_and_final_together_are_refused() -> None:
    async with served() as (_, client):
        await client.post("/v1/episodes/start", json={"episode_id": "b", "environment": "python_tool"})
        body = {"episode_id": "b", "turn": 0, "action": "", "tool_code": ["print(1)"], "final": True}
        assert (await client.post("/v1/episodes/step", json=body)).status_code == 422
        body = {"episode_id": "b", "turn": 0, "action": "", "tool_code": ["print(1)"] * 65}
        assert (await client.post("/v1/episodes/step", json=body)).status_code == 422


async def test_the_grpc_face_carries_tool_code_final_and_the_turn_limit() -> None:
    async with served() as (server, _), grpc.aio.insecure_channel(server.grpc_target) as channel:
        stub = pb_grpc.EpisodeServiceStub(channel)  # type: ignore[no-untyped-call]
        start = await stub.StartEpisode(
            pb.EpisodeStartRequest(episode_id="g", environment="python_tool", label="3", max_turns=3)
        )
        assert start.max_turns == 3
        step = await stub.StepEpisode(
            pb.EpisodeStepRequest(episode_id="g", turn=0, tool_code=["print(1 + 2)"])
        )
        assert step.status == pb.STATUS_OK and "3" in step.feedback and not step.done
        final = await stub.StepEpisode(
            pb.EpisodeStepRequest(episode_id="g", turn=1, action="```python\n\\boxed{3}\n```", final=True)
        )
        assert final.done and final.reward == 1.0


async def test_code_feedback_takes_the_program_from_tool_code_and_final_skips_to_hidden() -> None:
    label = json.dumps(
        {
            "visible": {"kind": "stdio", "cases": [{"input": "1 2\n", "output": "3"}]},
            "hidden": {"kind": "stdio", "cases": [{"input": "10 20\n", "output": "30"}]},
        }
    )
    grader = RulesGrader({"code": CodeGrader(CodeConfig())}, default="code")
    async with served(grader=grader) as (_, client):
        for episode in ("v", "h"):
            body = {"episode_id": episode, "environment": "code_feedback", "label": label}
            assert (await client.post("/v1/episodes/start", json=body)).json()["status"] == "OK"
        wrong = "a, b = map(int, input().split())\nprint(a - b)"
        checked = await _step(client, "v", 0, "my program", tool_code=[wrong])
        assert not checked["done"] and checked["feedback"].startswith("<feedback>"), checked
        right = "a, b = map(int, input().split())\nprint(a + b)"
        final = await _step(client, "h", 0, f"```python\n{right}\n```", final=True)
        assert final["done"] and final["reward"] == 1.0, final
        assert final["logs"]["episode/tool_calls"] == 0  # no visible run: straight to the hidden tests
