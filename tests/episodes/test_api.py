"""The episode API through its public faces (HTTP and gRPC) on a real server over loopback:
state across turns, idempotent retries, expiry, bounds, flagged failures, fixed log keys."""

from __future__ import annotations

import asyncio

import grpc
import httpx
import pytest

from arbiter.contract import EpisodeStepRequest
from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc
from services.episodes.extension import episodes
from services.transports.server import GraderServer
from tests.episodes.helpers import BoxedGrader, Episode, episode_settings, extension, served
from tests.helpers import free_port, server_settings


async def test_python_tool_episode_end_to_end() -> None:
    grader = BoxedGrader()
    async with served(grader=grader) as (server, client):
        episode = Episode(client, "e2e")
        started = await episode.start(prompt="What is 6*7?", label="42")
        assert started == {
            "episode_id": "e2e",
            "observation": "What is 6*7?",
            "status": "OK",
            "detail": "",
            "max_turns": 8,
        }
        first = await episode.step("Let me compute.\n```python\nx = 6 * 7\nprint(x)\n```")
        assert first["feedback"] == "<output>\n42\n</output>\n"
        assert first["done"] is False and first["reward"] == 0.0
        assert await episode.run("x + 1") == "<output>\n43\n</output>\n"  # state survives; echo
        final = await episode.step("So the answer is \\boxed{42}.")
        assert final["done"] is True and final["reward"] == 1.0 and final["score"] == 1.0
        assert grader.graded == ["So the answer is \\boxed{42}."]  # the final action alone
        finished = await episode.finish()
        assert finished["reward"] == 1.0 and finished["turns"] == 3 and finished["status"] == "OK"
        logs = finished["logs"]
        assert logs["episode/tool_calls"] == 2 and logs["episode/turns"] == 3
        assert logs["episode/correct"] == 1 and logs["episode/done"] == 1 and logs["episode/lost"] == 0
        assert logs["episode/tool_cpu_s"] > 0
        assert logs["trajectory/format/boxed"] == 1
        # the same key set on every answer of every episode
        assert set(first["logs"]) == set(final["logs"]) == set(logs)
        assert set(logs) == set(extension(server).manager.log_keys)


async def test_a_retried_step_answers_the_same_and_never_runs_the_tool_twice() -> None:
    async with served() as (_, client):
        episode = Episode(client, "retry")
        await episode.start()
        await episode.run("n = 0")
        action = "```python\nn += 1\nprint(n)\n```"
        first, again = await asyncio.gather(episode.step(action, turn=1), episode.step(action, turn=1))
        assert first == again and first["feedback"] == "<output>\n1\n</output>\n"
        assert await episode.step(action, turn=1) == first  # and once more, later
        assert await episode.step("```python\nprint(n)\n```", turn=2) == {
            **(await episode.step("```python\nprint(n)\n```", turn=2)),
        }
        episode.turn = 3
        assert "1" in await episode.run("print(n)")  # the increment ran exactly once
        other = await episode.step("```python\nn = 100\n```", turn=1)  # turn 1 with another action
        assert other["status"] == "INVALID_INPUT" and other["logs"]["episode/failed"] == 1
        gap = await episode.step("x", turn=9)
        assert gap["status"] == "INVALID_INPUT" and "out of order" in gap["detail"]


async def test_lost_finished_and_expired_episodes_answer_flagged_failures() -> None:
    settings = episode_settings(idle_ttl_s=0.4)
    async with served(settings) as (server, client):
        unknown = await Episode(client, "never-started").step("hello")
        assert unknown["status"] == "GRADER_ERROR" and unknown["done"] is True
        assert unknown["logs"]["episode/lost"] == 1 and "not held here" in unknown["detail"]
        assert (await Episode(client, "never-started").finish())["logs"]["episode/lost"] == 1

        done = Episode(client, "done")
        await done.start()
        final = await done.step("\\boxed{42}")
        finished = await done.finish()
        assert await done.finish() == finished  # a retried finish
        assert await done.step("\\boxed{42}", turn=0) == final  # a retried last step, after finish
        assert (await done.start())["status"] == "INVALID_INPUT"  # the id is spent

        idle = Episode(client, "idle")
        await idle.start()
        await idle.run("y = 1")
        pool = extension(server).interpreters()
        assert pool.live == 1
        await asyncio.sleep(1.5)  # past the TTL: the reaper frees it
        assert pool.live == 0 and "idle" not in extension(server).manager.open
        expired = await idle.step("```python\nprint(y)\n```")
        assert expired["status"] == "TIMEOUT" and expired["logs"]["episode/lost"] == 1
        assert "expired" in expired["detail"]


async def test_start_is_idempotent_and_bounded() -> None:
    async with served(episode_settings(max_episodes=3)) as (_, client):
        first = await Episode(client, "a").start(prompt="p")
        assert await Episode(client, "a").start(prompt="p") == first
        racing = await asyncio.gather(*(Episode(client, "race").start() for _ in range(5)))
        assert all(r == racing[0] for r in racing) and racing[0]["status"] == "OK"
        await Episode(client, "race").finish()
        clash = await Episode(client, "a").start(prompt="another prompt")
        assert clash["status"] == "INVALID_INPUT" and "already in use" in clash["detail"]
        await Episode(client, "b").start()
        await Episode(client, "c").start()
        full = await Episode(client, "d").start()
        assert full["status"] == "OVERLOADED" and "max_episodes" in full["detail"]
        await Episode(client, "a").finish()
        assert (await Episode(client, "d").start())["status"] == "OK"
        unknown = await Episode(client, "e").start(environment="chess")
        assert unknown["status"] == "INVALID_INPUT" and "python_tool" in unknown["detail"]
        bad = await client.post("/v1/episodes/step", json={"episode_id": "", "turn": -1, "action": "x"})
        assert bad.status_code == 422


async def test_the_grpc_episode_service() -> None:
    async with served() as (server, _), grpc.aio.insecure_channel(server.grpc_target) as channel:
        stub = pb_grpc.EpisodeServiceStub(channel)  # type: ignore[no-untyped-call]
        started = await stub.StartEpisode(
            pb.EpisodeStartRequest(episode_id="g", environment="python_tool", prompt="q", label="7")
        )
        assert started.status == pb.STATUS_OK and started.observation == "q"
        tool = await stub.StepEpisode(
            pb.EpisodeStepRequest(episode_id="g", turn=0, action="<code>3+4</code>")
        )
        assert tool.feedback == "<output>\n7\n</output>\n" and not tool.done
        final = await stub.StepEpisode(pb.EpisodeStepRequest(episode_id="g", turn=1, action="\\boxed{7}"))
        assert final.done and final.reward == 1.0 and final.status == pb.STATUS_OK
        finished = await stub.FinishEpisode(pb.EpisodeFinishRequest(episode_id="g"))
        assert finished.reward == 1.0 and finished.turns == 2 and finished.logs["episode/tool_calls"] == 1
        lost = await stub.StepEpisode(pb.EpisodeStepRequest(episode_id="nope", turn=0, action="x"))
        assert lost.status == pb.STATUS_GRADER_ERROR and lost.logs["episode/lost"] == 1
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await stub.StepEpisode(pb.EpisodeStepRequest(episode_id="", turn=0, action="x"))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_shutdown_frees_every_interpreter() -> None:
    async with served() as (server, client):
        for name in ("s1", "s2"):
            episode = Episode(client, name)
            await episode.start()
            await episode.run("import time")
        pool = extension(server).interpreters()
        sandboxes = [s.sandbox for s in list(pool._live.values())]
        assert len(sandboxes) == 2
    for sandbox in sandboxes:
        assert sandbox is not None and sandbox.process.poll() is not None  # killed and reaped
    assert extension(server).manager.open == {}


async def test_a_step_whose_caller_hung_up_still_runs_once() -> None:
    async with served() as (server, client):
        episode = Episode(client, "hangup")
        await episode.start()
        await episode.run("n = 0")
        manager = extension(server).manager
        action = "```python\nimport time\ntime.sleep(0.5)\nn += 1\nprint(n)\n```"
        request = EpisodeStepRequest(episode_id="hangup", turn=1, action=action)
        first = asyncio.ensure_future(manager.step(request))
        await asyncio.sleep(0.2)
        first.cancel()  # the caller went away mid-step (a cancelled gRPC call)
        retried = await manager.step(request)
        assert retried.feedback == "<output>\n1\n</output>\n"  # ran once, answered to the retry
        after = await Episode(client, "hangup").step("```python\nprint(n)\n```", turn=2)
        assert after["feedback"] == "<output>\n1\n</output>\n"


async def test_a_restarted_replica_flags_only_its_own_episodes() -> None:
    port = free_port()

    def replica(http_port: int) -> GraderServer:
        return GraderServer(
            "replica",
            BoxedGrader(),
            server_settings(http_port=http_port, grpc_port=-1),
            extensions=[episodes(episode_settings())],
        )

    async with served() as (_, other):
        survivor = Episode(other, "survivor")
        await survivor.start()
        await survivor.run("s = 'still'")
        first = replica(port)
        await first.start()
        async with httpx.AsyncClient(base_url=first.http_url, timeout=60) as client:
            victim = Episode(client, "victim")
            await victim.start()
            await victim.run("v = 1")
            await first.stop()  # the replica dies: its episodes and interpreters are gone
            async with replica(port):  # and comes back, empty, on the same address
                lost = await victim.step("```python\nprint(v)\n```")
        assert lost["status"] == "GRADER_ERROR" and lost["logs"]["episode/lost"] == 1 and lost["done"]
        assert "still" in await survivor.run("s")  # the other replica's episode goes on
