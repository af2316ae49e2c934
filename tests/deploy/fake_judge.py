"""The judge's fake OpenAI-compatible upstream, as a container of the compose tier.

`python -m tests.deploy.fake_judge` serves tests/judge_proxy/fake_openai.py's chat completions on
0.0.0.0:8000 (the fake itself binds loopback only, which a container's peers cannot reach).
tests/deploy/compose.ci.yml runs it in the judge_proxy image, under the name the shipped
config's local judge upstream uses (`vllm_judge`).
"""

from __future__ import annotations

import asyncio
import os

from services.transports.server import AsgiServer
from tests.judge_proxy.fake_openai import FakeOpenAI


async def serve(host: str, port: int) -> None:
    fake = FakeOpenAI()
    fake.keep_bodies = False
    server = AsgiServer(fake.app, host=host, port=port)
    await server.start()
    print(f"fake judge on {host}:{server.port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main() -> None:
    asyncio.run(
        serve(os.environ.get("FAKE_JUDGE_HOST", "0.0.0.0"), int(os.environ.get("FAKE_JUDGE_PORT", "8000")))
    )


if __name__ == "__main__":
    main()
