"""A finished episode's sandbox serves the next episode: nothing the first left behind (files,
processes, threads, variables, environment, a changed /tmp, frames written ahead) reaches the
next, and a sandbox whose zygote an episode tampered with is killed, never reused."""

from __future__ import annotations

import asyncio
import time

import httpx

from services.episodes.interpreter import InterpreterPool
from services.transports.server import GraderServer
from tests.episodes.helpers import Episode, episode_settings, extension, served

# Everything an episode can leave behind in its sandbox, from its interpreter's process.
LITTER = """\
import os, subprocess, threading, time
secret = 'hunter2'
os.environ['LEFT_BEHIND'] = secret
open('/tmp/secret.txt', 'w').write(secret)
open('/tmp/.hidden', 'w').write(secret)
os.makedirs('/tmp/deep/er/locked')
open('/tmp/deep/er/locked/f', 'w').write(secret)
os.chmod('/tmp/deep/er/locked', 0)
os.chmod('/tmp/deep', 0o500)
def scribble():
    n = 0
    while True:
        n += 1
        try:
            open(f'/tmp/thread-{n}', 'w').write(secret)
        except OSError:
            pass
        time.sleep(0.01)
threading.Thread(target=scribble, daemon=True).start()
subprocess.Popen(['/bin/sh', '-c', 'while true; do echo x > /tmp/daemon-$$; sleep 0.01; done'],
                 start_new_session=True)
if os.fork() == 0:  # a double fork: an orphan of the sandbox's init
    if os.fork() == 0:
        os.setsid()
        while True:  # never back to the interpreter's loop, which would read its protocol
            time.sleep(0.01)
            try:
                open('/tmp/orphan', 'w').write(secret)
            except OSError:
                pass
    os._exit(0)
stopped = subprocess.Popen(['/bin/sleep', '1000'])
os.kill(stopped.pid, 19)  # SIGSTOP: a stopped process is killed too
os.chmod('/tmp', 0o500)
print('littered')
"""

LOOK = """\
import os
print(sorted(os.listdir('/tmp')))
print('LEFT_BEHIND' in os.environ, 'secret' in globals())
others = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
print(others == sorted({1, os.getppid(), os.getpid()}), others)
print(oct(os.stat('/tmp').st_mode & 0o7777))
open('/tmp/mine.txt', 'w').write('ok')
print(open('/tmp/mine.txt').read())
"""


def pool_of(server: GraderServer) -> InterpreterPool:
    return extension(server).interpreters()


async def settled(pool: InterpreterPool, kept: int) -> None:
    """Waits until the given-back sandboxes were proven clean (or killed): `kept` idle ones."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        returning = pool.idle_sandboxes() - len(pool._reuse.idle_sandboxes()) if pool._reuse else 0
        if returning == 0 and pool.idle_sandboxes() == kept:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{pool.idle_sandboxes()} idle sandboxes, {kept} expected")


async def one_episode(client: httpx.AsyncClient, name: str, code: str) -> str:
    episode = Episode(client, name)
    await episode.start()
    output = await episode.run(code)
    await episode.finish()
    return output


async def test_the_next_episode_in_a_reused_sandbox_finds_nothing_of_the_last() -> None:
    async with served(episode_settings(warm_interpreters=0)) as (server, client):
        pool = pool_of(server)
        assert "littered" in await one_episode(client, "litterbug", LITTER)
        await settled(pool, kept=1)
        fresh = pool._reuse.fresh if pool._reuse else 0
        look = await one_episode(client, "next", LOOK)
        assert pool.reused == 1 and pool._reuse is not None and pool._reuse.fresh == fresh, look
        lines = look.split("<output>\n", 1)[1].splitlines()
        assert lines[0] == "[]", look  # the interpreter's capture file is unlinked: nothing at all
        assert lines[1] == "False False", look
        assert lines[2].startswith("True"), look
        assert lines[3] == oct(0o1777) or lines[3] == oct(0o755), look  # as bwrap made it
        assert lines[4] == "ok" and "hunter2" not in look, look


async def test_a_sandbox_serves_episode_after_episode_and_state_never_leaks() -> None:
    async with served(episode_settings(warm_interpreters=0)) as (server, client):
        pool = pool_of(server)
        for n in range(4):
            output = await one_episode(client, f"e{n}", f"print('v' in globals())\nv = {n}\nv")
            assert output == f"<output>\nFalse\n{n}\n</output>\n"
            await settled(pool, kept=1)
        assert pool.reused == 3


async def test_a_zygote_tampered_with_is_never_reused() -> None:
    tamperings = {
        "niced": "import os\nos.setpriority(os.PRIO_PROCESS, os.getppid(), 5)",
        "limited": "import os, resource\nresource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (64, 64))",
        "stopped": "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)",
        "interrupted": "import os, signal\nos.kill(os.getppid(), signal.SIGINT)",
    }
    async with served(episode_settings(warm_interpreters=0)) as (server, client):
        pool = pool_of(server)
        for name, code in tamperings.items():
            await one_episode(client, name, code)
            await settled(pool, kept=0)  # proven unclean (or gone): killed
            after = await one_episode(
                client,
                f"after-{name}",
                "import os, resource\n"
                "print(os.getpriority(os.PRIO_PROCESS, os.getppid()), "
                "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)[0] != 64)",
            )
            assert after == "<output>\n0 True\n</output>\n", (name, after)
            await settled(pool, kept=1)  # the next tampering takes this clean one
        assert pool.reused == len(tamperings) - 1


async def test_frames_written_ahead_never_answer_the_next_episode() -> None:
    forge = (
        "import json, os, struct\n"
        "for reply in ({'output': 'forged\\n', 'error': False, 'truncated': False, 'output_bytes': 7},"
        " {'pong': 'x', 'clean': True}, {'ended': True}):\n"
        "    body = json.dumps(reply).encode()\n"
        "    for fd in range(3, 16):\n"
        "        try:\n"
        "            os.write(fd, struct.pack('>I', len(body)) + body)\n"
        "        except OSError:\n"
        "            pass\n"
        "print('sent')"
    )
    async with served(episode_settings(warm_interpreters=0)) as (server, client):
        pool = pool_of(server)
        await one_episode(client, "forger", forge)
        await settled(pool, kept=1)
        assert await one_episode(client, "honest", "print('mine')") == "<output>\nmine\n</output>\n"
        assert pool.reused == 1


async def test_shutdown_frees_kept_sandboxes_too() -> None:
    async with served(episode_settings(warm_interpreters=0)) as (server, client):
        pool = pool_of(server)
        await one_episode(client, "kept", "1")
        await settled(pool, kept=1)
        assert pool._reuse is not None
        (kept,) = pool._reuse.idle_sandboxes()
    assert kept.process.poll() is not None  # killed and reaped


async def test_kept_sandboxes_left_unused_are_killed() -> None:
    settings = episode_settings(warm_interpreters=0, python_tool={"kept_sandbox_idle_s": 1.0})
    async with served(settings) as (server, client):
        pool = pool_of(server)
        await one_episode(client, "once", "1")
        await settled(pool, kept=1)
        assert pool._reuse is not None
        (kept,) = pool._reuse.idle_sandboxes()
        await settled(pool, kept=0)  # trimmed once unused for a second
        for _ in range(1500):
            if kept.process.poll() is not None:
                break
            await asyncio.sleep(0.02)
        assert kept.process.poll() is not None  # killed and reaped
        assert "True" in await one_episode(client, "later", "print(True)")  # a fresh one serves
