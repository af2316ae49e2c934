"""Episodes under `arbiter serve --workers 2` (real processes, SO_REUSEPORT): a gRPC channel's
calls stay on the worker holding its episodes; a call that lands on the other worker answers a
flagged failure (`episode/lost`), never another episode's state or a silent zero."""

from __future__ import annotations

import os
import sys

import grpc
import httpx

from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc
from testkit.procs import ServiceProcess, free_port


def test_episodes_with_two_workers() -> None:
    http, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "ARBITER_REWARD_RULES__HTTP_PORT": str(http),
        "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc_port),
        "ARBITER_REWARD_RULES__MATH__WORKERS": "1",
        "ARBITER_EPISODES__WARM_INTERPRETERS": "0",
        "ARBITER_EPISODES__PYTHON_TOOL__PRESTART": "false",
        "ARBITER_LOG__LEVEL": "WARNING",
    }
    argv = [sys.executable, "-m", "services.cli", "serve", "reward_rules", "--workers", "2"]
    with ServiceProcess(argv, f"http://127.0.0.1:{http}/readyz", env=env, start_timeout_s=120):
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stub = pb_grpc.EpisodeServiceStub(channel)  # type: ignore[no-untyped-call]
            for n in range(4):  # one connection: every call reaches the worker that holds them
                episode = f"w{n}"
                start = pb.EpisodeStartRequest(episode_id=episode, environment="python_tool", label="1")
                assert stub.StartEpisode(start, timeout=60).status == pb.STATUS_OK
                step = stub.StepEpisode(
                    pb.EpisodeStepRequest(episode_id=episode, turn=0, action="```python\nprint(n := 7)\n```"),
                    timeout=60,
                )
                assert step.status == pb.STATUS_OK and "7" in step.feedback
        answers = []
        body = {"episode_id": "w0", "turn": 0, "action": "```python\nprint(n := 7)\n```"}
        for _ in range(30):  # a new connection each time: the kernel picks a worker
            with httpx.Client(base_url=f"http://127.0.0.1:{http}", timeout=60) as client:
                answers.append(client.post("/v1/episodes/step", json=body).json())
        held = [a for a in answers if a["status"] == "OK"]
        lost = [a for a in answers if a["status"] != "OK"]
        assert all("7" in a["feedback"] for a in held)  # the stored reply (the tool did not run again)
        assert all(a["status"] == "GRADER_ERROR" and a["logs"]["episode/lost"] == 1 for a in lost)
        assert held and lost  # both workers answered: one holds the episode, the other says so
