"""Episodes under `arbiter serve --workers 2` (real processes, SO_REUSEPORT).

Whichever worker the kernel hands a connection to, an episode's calls reach the worker that
holds it (its owner, fixed by the id), so a client that opens a new connection per call works.
A killed worker loses only its own episodes, and they answer flagged failures (`episode/lost`),
never another episode's state or a silent zero.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import grpc
import httpx

from arbiter.v1 import reward_pb2 as pb
from arbiter.v1 import reward_pb2_grpc as pb_grpc
from services.episodes.routing import owner_of
from testkit.procs import ServiceProcess, free_port

CELL = "```python\nprint(n := 7)\n```"


def _worker_pids(supervisor: int) -> dict[int, int]:
    """Worker index -> pid, read from the supervisor's children's command lines."""
    pids: dict[int, int] = {}
    for child in Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split():
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"--worker" in argv:
            pids[int(argv[argv.index(b"--worker") + 1])] = int(child)
    return pids


def _env(http: int, grpc_port: int) -> dict[str, str]:
    return {
        **os.environ,
        "ARBITER_REWARD_RULES__HTTP_PORT": str(http),
        "ARBITER_REWARD_RULES__GRPC_PORT": str(grpc_port),
        "ARBITER_REWARD_RULES__MATH__WORKERS": "1",
        "ARBITER_EPISODES__WARM_INTERPRETERS": "0",
        "ARBITER_EPISODES__PYTHON_TOOL__PRESTART": "false",
        "ARBITER_LOG__LEVEL": "WARNING",
    }


def test_every_call_reaches_the_worker_holding_its_episode() -> None:
    http, grpc_port = free_port(), free_port()
    argv = [sys.executable, "-m", "services.cli", "serve", "reward_rules", "--workers", "2"]
    with ServiceProcess(
        argv, f"http://127.0.0.1:{http}/readyz", env=_env(http, grpc_port), start_timeout_s=120
    ):
        ids = [f"w{n}" for n in range(6)]
        assert {owner_of(i, 2) for i in ids} == {0, 1}  # both workers own some
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stub = pb_grpc.EpisodeServiceStub(channel)  # type: ignore[no-untyped-call]
            for episode in ids:  # one connection, one worker: it hands the others' episodes on
                start = pb.EpisodeStartRequest(episode_id=episode, environment="python_tool", label="7")
                assert stub.StartEpisode(start, timeout=60).status == pb.STATUS_OK
        for episode in ids:  # a new connection per call: the kernel picks any worker
            body = {"episode_id": episode, "turn": 0, "action": CELL}
            for _ in range(3):  # the first runs the cell, the retries get its stored answer
                with httpx.Client(base_url=f"http://127.0.0.1:{http}", timeout=60) as client:
                    answer = client.post("/v1/episodes/step", json=body).json()
                assert answer["status"] == "OK" and "7" in answer["feedback"], answer
        with httpx.Client(base_url=f"http://127.0.0.1:{http}", timeout=60) as client:
            stats = client.get("/v1/episodes/stats").json()
            assert stats["open"] == len(ids) and stats["workers"] == 2
            for episode in ids:
                answer = client.post(
                    "/v1/episodes/step", json={"episode_id": episode, "turn": 1, "action": "\\boxed{7}"}
                ).json()
                assert answer["status"] == "OK" and answer["done"] and answer["reward"] == 1.0, answer
                finished = client.post("/v1/episodes/finish", json={"episode_id": episode}).json()
                assert finished["status"] == "OK" and finished["reward"] == 1.0
            assert client.get("/v1/episodes/stats").json()["open"] == 0


def test_a_killed_worker_loses_only_its_own_episodes() -> None:
    http, grpc_port = free_port(), free_port()
    argv = [sys.executable, "-m", "services.cli", "serve", "reward_rules", "--workers", "2"]
    env = _env(http, grpc_port)
    with ServiceProcess(argv, f"http://127.0.0.1:{http}/readyz", env=env, start_timeout_s=120) as service:
        ids = [f"k{n}" for n in range(8)]
        with httpx.Client(base_url=f"http://127.0.0.1:{http}", timeout=60) as client:
            for episode in ids:
                body = {"episode_id": episode, "environment": "python_tool", "label": "7"}
                assert client.post("/v1/episodes/start", json=body).json()["status"] == "OK"
            before = _worker_pids(service.pid)
            os.kill(before[1], signal.SIGKILL)
            deadline = time.monotonic() + 120  # the supervisor restarts it
            while _worker_pids(service.pid).get(1) in (None, before[1]) and time.monotonic() < deadline:
                time.sleep(0.2)
            for episode in ids:
                answer = client.post(
                    "/v1/episodes/step", json={"episode_id": episode, "turn": 0, "action": CELL}
                ).json()
                if owner_of(episode, 2) == 1:
                    assert answer["status"] == "GRADER_ERROR" and answer["done"], answer
                    assert answer["logs"]["episode/lost"] == 1
                else:
                    assert answer["status"] == "OK" and "7" in answer["feedback"], answer
                    assert answer["logs"]["episode/lost"] == 0
