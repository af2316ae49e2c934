"""SIGTERM drains: requests in flight when the signal arrives still get their rewards."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx

from tests.helpers import ServiceProcess, free_port

# A service whose grader takes a while, served by the real CLI entry point in its own process.
SLOW_SERVICE = """
import asyncio, sys
from arbiter.contract import GraderInfo, Result
from services.transports.server import GraderServer, run_until_signalled
from services.common.settings import ServerSettings

class Slow:
    info = GraderInfo(name="slow", version="1", config_hash="t")
    log_keys = ()
    async def score(self, samples):
        await asyncio.sleep(1.5)
        return [Result(reward=float(len(s.response)), score=1.0) for s in samples]
    async def aclose(self):
        pass

settings = ServerSettings(http_port=int(sys.argv[1]), grpc_port=-1)
asyncio.run(run_until_signalled([GraderServer("slow", Slow(), settings)]))
"""


def test_sigterm_finishes_requests_in_flight(tmp_path: Path) -> None:
    script = tmp_path / "slow_service.py"
    script.write_text(SLOW_SERVICE)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    paths = [str(Path(__file__).resolve().parents[1]), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    service = ServiceProcess([sys.executable, str(script), str(port)], f"{url}/readyz", env=env)

    async def in_flight_then_sigterm() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            requests = [
                asyncio.create_task(http.post("/get_reward", json={"query": ["x" * n], "prompts": [""]}))
                for n in range(1, 21)
            ]
            await asyncio.sleep(0.5)  # all are being graded
            os.kill(service.pid, signal.SIGTERM)
            return await asyncio.gather(*requests)

    with service:
        replies = asyncio.run(in_flight_then_sigterm())
        assert service.proc is not None
        assert service.proc.wait(timeout=30) == 0  # drained, then exited cleanly on its own
    assert [r.status_code for r in replies] == [200] * 20
    assert [r.json()["rewards"] for r in replies] == [[float(n)] for n in range(1, 21)]
