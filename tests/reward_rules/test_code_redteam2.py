"""A red-team pass over `/run_code`'s files, fair slots, languages and reused sandboxes.

Each probe is what an attacker (or an RL policy whose program is graded) would send through the
public API: `/run_code` over HTTP on loopback, served by reward_rules built as `arbiter serve`
builds it, real sandboxes. Verdicts only: no probe asserts on a duration, and every probe holds
whatever the machine's load (a limit a run may or may not reach is never the verdict checked).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from arbiter.contract import Sample, Status
from services.catalog import make_server
from services.reward_rules.code import CodeConfig, CodeGrader
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.reward_rules.code_fixtures import score, stdio


def body(code: str, language: str = "python", timeout: float = 25, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "compile_timeout": timeout,
        "run_timeout": timeout,
        "code": code,
        "stdin": "",
        "memory_limit_MB": 256,
        "language": language,
        "files": {},
        "fetch_files": [],
    }
    data.update(extra)
    return data


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


@pytest.fixture
async def rules() -> AsyncIterator[GraderServer]:
    code = {
        "workers": 1,
        "warm_sandboxes": 1,
        "run_code_workers": 1,  # one thread: consecutive requests meet in a reused sandbox
        "run_code_max_wait_s": 120,
        "run_code_max_files": 8,
        "run_code_files_mb": 16,
        "tmpfs_mb": 8,  # smaller than the files' bound: uploads are bounded by the disk
    }
    settings = ArbiterSettings.model_validate(
        {"reward_rules": {"host": "127.0.0.1", "http_port": 0, "grpc_port": -1, "code": code}}
    )
    async with make_server("reward_rules", settings) as server:
        yield server


async def post(
    server: GraderServer, data: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{server.http_url}/run_code", json=data, timeout=180, headers=headers)


async def run_code(server: GraderServer, data: dict[str, Any]) -> dict[str, Any]:
    response = await post(server, data)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def needs(*tools: str) -> pytest.MarkDecorator:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


HONEST = body("print(int(input()) * 2)", stdin="21\n")


async def served_honestly(server: GraderServer) -> None:
    """The next caller after a hostile run gets its right answer."""
    answer = await run_code(server, HONEST)
    assert answer["status"] == "Success", answer
    assert answer["run_result"]["stdout"] == "42\n"


# ------------------------------------------------------------------ nothing of one request reaches the next

SECRET = "s3cr3t-of-the-first-caller"

# Leaves a session leader behind that copies whatever appears in /tmp into a file of its own,
# and a second one that keeps the secret in its own command line.
LINGER = """
(setsid sh -c 'while :; do cat /tmp/* >> /tmp/.seen 2>/dev/null; sleep 0.05; done' &)
(setsid sh -c 'exec -a SECRET_HOLDER_{secret} sleep 600' &)
cat secret.txt > /dev/null
echo left
"""

LOOK = """
import os
mine = {os.getpid(), os.getppid()}
found = []
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) not in mine and int(pid) != 1:
        try:
            found.append(open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' ').decode())
        except OSError:
            pass
names = sorted(n for n in os.listdir('.') if n != '.stdin')
print('SECRET' if any('SECRET' in line for line in found) else 'no holder')
print(names)
"""


@needs("bash")
async def test_a_request_s_leftover_processes_and_files_never_meet_the_next(rules: GraderServer) -> None:
    first = await run_code(
        rules, body(LINGER.replace("{secret}", SECRET), "bash", files={"secret.txt": b64(SECRET)})
    )
    assert first["run_result"]["stdout"] == "left\n", first
    second = await run_code(rules, body(LOOK, files={"mine.txt": b64("mine")}, fetch_files=[".seen"]))
    assert second["status"] == "Success", second
    out = second["run_result"]["stdout"]
    assert SECRET not in out and "no holder" in out, out
    assert "['mine.txt']" in out, out  # nothing of the first request's files or its watcher's
    assert second["files"] == {}


# -------------------------------------------------- files: paths, sizes, and what a program leaves


@pytest.mark.parametrize(
    "name",
    [
        "/tmp/.stdin",
        "././.prog",
        "/run/arbiter-harness",
        "/tmp//a",
        "a/./b",
        "/tmp/../etc/passwd",
        "a/" * 20 + "b",
        "x" * 2000,
        "a\0b",
    ],
)
async def test_an_upload_path_out_of_the_run_or_onto_the_harness_is_refused(
    rules: GraderServer, name: str
) -> None:
    response = await post(rules, body("print(1)", files={name: b64("x")}))
    assert response.status_code == 422, response.text
    response = await post(rules, body("print(1)", fetch_files=[name]))
    assert response.status_code == 422, response.text


async def test_uploads_past_the_sandbox_s_disk_are_refused_not_a_sandbox_error(rules: GraderServer) -> None:
    """12 MB of files fit run_code_files_mb (16) but not an 8 MB /tmp: refused up front (422),
    not a SandboxError after the worker died of a full disk; what fits is written."""
    big = await post(rules, body("print(1)", files={"a.bin": b64(bytes(12 << 20))}))
    assert big.status_code == 422, big.text
    fits = await run_code(
        rules, body("import os\nprint(os.path.getsize('a.bin'))", files={"a.bin": b64(bytes(1 << 20))})
    )
    assert fits["run_result"]["stdout"] == f"{1 << 20}\n", fits
    await served_honestly(rules)


async def test_a_program_that_fills_the_disk_still_gets_its_files_fetched_bounded(
    rules: GraderServer,
) -> None:
    program = (
        "import os\n"
        "os.link('a.txt', 'hard.txt')\n"
        "os.makedirs('d/e', exist_ok=True)\n"
        "os.symlink('/tmp', 'd/e/up')\n"
        "try:\n"
        "    open('fill.bin', 'wb').write(bytes(64 << 20))\n"
        "except OSError:\n"
        "    pass\n"
        "print('filled')\n"
    )
    fetch = ["hard.txt", "d/e/up/a.txt", "fill.bin", "d", "a.txt"]
    data = await run_code(rules, body(program, files={"a.txt": b64("alpha")}, fetch_files=fetch))
    assert data["run_result"]["stdout"] == "filled\n", data
    assert data["files"].get("hard.txt") == b64("alpha")  # its own file, by another name
    assert "d/e/up/a.txt" not in data["files"] and "d" not in data["files"]
    assert sum(len(v) for v in data["files"].values()) <= (8 << 20) * 4 // 3 + 8
    await served_honestly(rules)


async def test_a_program_cannot_replace_a_fetched_path_with_a_link_while_it_is_fetched(
    rules: GraderServer,
) -> None:
    """A leftover process that swaps `out` for a link to the harness's /proc entries as fetching
    starts gets nothing through the link: leftovers are gone before the fetch."""
    program = (
        "import os, time\n"
        "open('out', 'w').write('mine')\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    for _ in range(4000):\n"
        "        try:\n"
        "            os.rename('out', 'gone')\n"
        "            os.symlink('/proc/1/environ', 'out')\n"
        "            os.unlink('out'); os.rename('gone', 'out')\n"
        "        except OSError:\n"
        "            pass\n"
        "        time.sleep(0.001)\n"
        "    os._exit(0)\n"
        "print('parent')\n"
    )
    for _ in range(3):
        data = await run_code(rules, body(program, fetch_files=["out"]))
        assert data["files"].get("out") in (None, b64("mine")), data


# ------------------------------------------------------------------ huge outputs are bounded


@needs("bash")
async def test_an_endless_output_is_cut_and_the_answer_stays_small(rules: GraderServer) -> None:
    response = await post(rules, body("yes 'aaaaaaaaaaaaaaaa' & yes 'bbbbbbbb' >&2; wait", "bash", timeout=5))
    assert response.status_code == 200
    assert len(response.content) < 3 * (64 << 20)
    assert response.json()["status"] == "Failed", response.json()["run_result"]["status"]
    await served_honestly(rules)


# ------------------------------------------------------------------ bombs in each runtime are verdicts


BOMBS = [
    pytest.param("bash", ":(){ :|:& };:", marks=needs("bash"), id="bash"),
    pytest.param(
        "python",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        id="python",
    ),
    pytest.param(
        "java",
        "public class Main { public static void main(String[] a) throws Exception {"
        " while (true) { Thread t = new Thread(() -> {"
        " try { Thread.sleep(600000); } catch (Exception e) {} });"
        " t.setDaemon(false); t.start(); } } }",
        marks=needs("java", "javac"),
        id="java-threads",
    ),
    pytest.param(
        "nodejs",
        "const {Worker} = require('worker_threads');\n"
        "for (;;) { try { new Worker('for(;;){}', {eval: true}); } catch (e) {} }",
        marks=needs("node"),
        id="nodejs-workers",
    ),
    pytest.param(
        "go",
        'package main\nimport "time"\nfunc main() {\n for {\n  go func() { time.Sleep(time.Hour) }()\n }\n}',
        marks=needs("go"),
        id="go-goroutines",
    ),
]


@pytest.mark.parametrize(("language", "code"), BOMBS)
async def test_a_bomb_in_each_runtime_is_a_verdict_and_the_next_caller_is_served(
    rules: GraderServer, language: str, code: str
) -> None:
    answer = await run_code(rules, body(code, language, timeout=3))
    assert answer["status"] in ("Success", "Failed"), answer  # bash's bomb leaves in the background
    await served_honestly(rules)


# -------------------------------------------------- the compile cache keeps each caller's limits


@needs("g++")
async def test_a_compile_killed_for_its_limits_is_not_anothers_compile_error(rules: GraderServer) -> None:
    """A caller that compiles a source with too little memory or time poisons nothing: the same
    source with room compiles and runs."""
    source = (
        "#include <bits/stdc++.h>\nint main(){std::vector<int> v{3,1,2};std::sort(v.begin(),v.end());"
        'std::cout<<v[0]<<v[1]<<v[2]<<"\\n";}\n'
    )
    starved = await post(rules, body(source, "cpp", compile_timeout=0.01, memory_limit_MB=4))
    assert starved.status_code in (200, 504), starved.text
    fine = await run_code(rules, body(source, "cpp"))
    assert fine["status"] == "Success", fine
    assert fine["run_result"]["stdout"] == "123\n"


@needs("go")
async def test_a_go_compile_reads_no_file_of_another_request(rules: GraderServer) -> None:
    """`//go:embed` takes files of the package's directory at compile time: only the source is
    there (uploads come after the compile, and the work dir is emptied between requests)."""
    await run_code(rules, body("print(1)", files={"leak.txt": b64(SECRET)}))
    source = (
        'package main\nimport (_ "embed"; "fmt")\n//go:embed leak.txt\nvar leak string\n'
        "func main() { fmt.Print(leak) }\n"
    )
    answer = await run_code(rules, body(source, "go", files={"leak.txt": b64("later")}))
    assert SECRET not in str(answer), answer
    assert answer["status"] == "Failed" and answer["compile_result"]["return_code"] != 0, answer


# ------------------------------------------------------------------ callers and the queue


async def test_a_flood_under_many_caller_names_is_refused_not_queued_without_bound(
    rules: GraderServer,
) -> None:
    """Renaming oneself per request (X-Arbiter-Caller) buys no more than the global queue: past it
    a request is a 504 at once, and the service answers an honest caller afterwards."""
    import asyncio

    async def one(i: int) -> int:
        response = await post(
            rules, body("import time\ntime.sleep(0.2)", timeout=5), {"X-Arbiter-Caller": f"c{i}"}
        )
        return response.status_code

    codes = await asyncio.gather(*(one(i) for i in range(12)))
    assert set(codes) <= {200, 504}, codes
    await served_honestly(rules)


# ------------------------------------------------------------------ a memory limit below the sandbox's own


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("python", "print(1)"),
        pytest.param("bash", "echo 1", marks=needs("bash")),
        pytest.param("cpp", "int main(){}", marks=needs("g++")),
    ],
)
async def test_a_memory_limit_below_the_sandbox_s_own_use_is_the_run_s_verdict(
    rules: GraderServer, language: str, code: str
) -> None:
    """memory_limit_MB 1: the kernel refuses a limit below what the harness holds (EBUSY). That is
    the run's memory verdict (SandboxFusion: the program cannot start), never a 500; and no
    compile outcome is kept for the same source with room."""
    for _ in range(2):
        answer = await run_code(rules, body(code, language, memory_limit_MB=1))
        assert answer["status"] == "Failed", answer
    fine = await run_code(rules, body(code, language))
    assert fine["status"] == "Success", fine


# ------------------------------------------------------------------ the same through the code grader


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=1, warm_sandboxes=1, time_limit_s=5.0, compile_time_limit_s=20.0))
    yield grader
    asyncio.run(grader.aclose())


@pytest.mark.parametrize(
    "sample",
    [
        stdio("print(int(input()) * 2)", [("21\n", "42\n")], memory_limit_mb=1),
        pytest.param(
            Sample(
                response="```cpp\n#include <cstdio>\n"
                'int main(){int a;scanf("%d",&a);printf("%d\\n",2*a);}\n```',
                label=json.dumps(
                    {
                        "grader": "code",
                        "language": "cpp",
                        "memory_limit_mb": 1,
                        "tests": {"kind": "stdio", "cases": [{"input": "21\n", "output": "42\n"}]},
                    }
                ),
            ),
            marks=needs("g++"),
            id="cpp",
        ),
    ],
)
def test_a_label_s_memory_limit_below_the_sandbox_s_own_is_a_verdict(
    grader: CodeGrader, sample: Sample
) -> None:
    """Never paid, never the grader's crash: the memory limit is the run's, so is the verdict."""
    (result,) = score(grader, sample)
    assert result.status == Status.OK, result
    assert result.reward == 0.0, result
    (honest,) = score(grader, stdio("print(int(input()) * 2)", [("21\n", "42\n")]))
    assert honest.reward == 1.0, honest


# ------------------------------------------------------------------ lone surrogates (JSON's \ud800 escapes)


@pytest.mark.parametrize(
    ("request_body", "refused"),
    [
        (body("print(1)", files={"a\ud800": b64("x")}), True),
        (body("print(1)", fetch_files=["a\ud800"]), True),
        pytest.param(body("int main(){}//\ud800", "cpp"), False, marks=needs("g++"), id="cpp-source"),
        (body("import sys\nprint(len(sys.stdin.read()))", stdin="\ud800x"), False),
    ],
)
async def test_a_lone_surrogate_anywhere_in_a_request_is_an_answer_not_a_500(
    rules: GraderServer, request_body: dict[str, Any], refused: bool
) -> None:
    """JSON lets a request carry `\\ud800`, which no UTF-8 encoder takes: a path with one is
    refused (422), a source or stdin with one is the program's own affair; never a 500."""
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{rules.http_url}/run_code",
            content=json.dumps(request_body),  # ensure_ascii: the surrogate travels as an escape
            headers={"content-type": "application/json"},
            timeout=180,
        )
    assert response.status_code == (422 if refused else 200), response.text
    await served_honestly(rules)


@needs("g++")
def test_a_response_with_a_lone_surrogate_in_its_cpp_block_is_a_verdict(grader: CodeGrader) -> None:
    label = {
        "grader": "code",
        "language": "cpp",
        "tests": {"kind": "stdio", "cases": [{"input": "21\n", "output": "42\n"}]},
    }
    sample = Sample(response="```cpp\nint main(){} // \ud800\n```", label=json.dumps(label))
    (result,) = score(grader, sample)
    assert result.status == Status.OK and result.reward == 0.0, result


# ------------------------------------------------------------------ what a compile can read


COMPILE_READS = [
    pytest.param("cpp", '#include "/dev/zero"\nint main(){}\n', marks=needs("g++"), id="cpp-dev-zero"),
    pytest.param(
        "rust",
        'static Z: &[u8] = include_bytes!("/dev/zero");\nfn main(){ println!("{}", Z.len()); }\n',
        marks=needs("rustc"),
        id="rust-dev-zero",
    ),
]


@pytest.mark.parametrize(("language", "code"), COMPILE_READS)
async def test_a_compile_that_reads_an_endless_file_is_the_program_s_compile_error(
    rules: GraderServer, language: str, code: str
) -> None:
    answer = await run_code(rules, body(code, language, timeout=10))
    assert answer["status"] == "Failed" and answer["run_result"] is None, answer
    assert answer["compile_result"]["return_code"] != 0 or answer["compile_result"]["status"] != "Finished"
    await served_honestly(rules)


@needs("rustc")
async def test_a_compile_sees_only_the_sandbox_s_own_environment(rules: GraderServer) -> None:
    """What a compile-time read of its environment bakes into a (cached, shared) binary holds no
    secret of the service: only the sandbox's fixed variables."""
    code = 'static E: &str = include_str!("/proc/self/environ");\nfn main(){ print!("{}", E); }\n'
    answer = await run_code(rules, body(code, "rust"))
    assert answer["status"] == "Success", answer
    names = {item.split("=", 1)[0] for item in answer["run_result"]["stdout"].split("\0") if item}
    assert names <= {"PATH", "HOME", "LANG", "TMPDIR", "ARBITER_SANDBOX", "PWD"}, names
