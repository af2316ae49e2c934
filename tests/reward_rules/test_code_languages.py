"""Go, Rust, Java, JavaScript (node) and bash through the public API: the code grader's stdio tests
and SandboxFusion's `/run_code`. Every language gets the same verdicts as C++ (right, wrong answer,
compile error where it compiles, runtime error, timeout), compiled and run in the sample's sandbox."""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from arbiter.contract import Sample, Status
from services.catalog import make_server
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.languages import missing, toolchain
from services.settings_tree import ArbiterSettings
from services.transports.server import GraderServer
from tests.reward_rules.code_fixtures import score

# Per language: a right program (sum of two numbers), a wrong one, one that does not compile (None
# for an interpreted language), one that fails at run time, one that never ends.
PROGRAMS: dict[str, dict[str, str | None]] = {
    "go": {
        "right": 'package main\nimport "fmt"\nfunc main() { var a, b int64; fmt.Scan(&a, &b); fmt.Println(a + b) }\n',
        "wrong": 'package main\nimport "fmt"\nfunc main() { var a, b int64; fmt.Scan(&a, &b); fmt.Println(a - b) }\n',
        "compile": "package main\nfunc main() { x := }\n",
        "crash": 'package main\nfunc main() { panic("boom") }\n',
        "loop": "package main\nfunc main() { x := 0; for { x++ } }\n",
    },
    "rust": {
        "right": 'use std::io::Read;\nfn main() { let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap(); let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); println!("{}", v[0] + v[1]); }\n',
        "wrong": 'use std::io::Read;\nfn main() { let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap(); let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); println!("{}", v[0] * v[1]); }\n',
        "compile": 'fn main() { let x: i32 = "s"; }\n',
        "crash": 'fn main() { panic!("boom"); }\n',
        "loop": 'fn main() { let mut x: u64 = 1; loop { x = x.wrapping_mul(3).wrapping_add(1); if x == 0 { println!("{}", x); } } }\n',
    },
    "java": {  # a public class not named Main: the file and the class run are named after it
        "right": "import java.util.*;\npublic class Solution { public static void main(String[] a) { Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }\n",
        "wrong": "import java.util.*;\npublic class Main { public static void main(String[] a) { Scanner s = new Scanner(System.in); System.out.println(s.nextLong() - s.nextLong()); } }\n",
        "compile": 'public class Main { public static void main(String[] a) { int x = "s"; } }\n',
        "crash": 'public class Main { public static void main(String[] a) { throw new RuntimeException("boom"); } }\n',
        "loop": "public class Main { public static void main(String[] a) { long x = 0; while (true) { x++; } } }\n",
    },
    "nodejs": {
        "right": 'const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\nconsole.log(t[0] + t[1]);\n',
        "wrong": 'const t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\nconsole.log(t[0] * t[1]);\n',
        "compile": None,
        "crash": 'throw new Error("boom");\n',
        "loop": "let x = 0;\nwhile (true) { x++; }\n",
    },
    "bash": {
        "right": "read a b\necho $((a + b))\n",
        "wrong": "read a b\necho $((a * b))\n",
        "compile": None,
        "crash": "echo boom >&2\nexit 3\n",
        "loop": "while :; do :; done\n",
    },
}
CASES = [("1 2\n", "3\n"), ("5 6\n", "11\n")]
EXPECTED = {"wrong": "wrong answer", "compile": "compile error", "crash": "runtime error", "loop": "timeout"}


def installed(language: str) -> Any:
    chain = toolchain(language)
    assert chain is not None
    problem = missing(chain)
    return pytest.param(language, marks=pytest.mark.skipif(problem is not None, reason=problem or ""))


LANGUAGES = [installed(language) for language in PROGRAMS]


def sample(language: str, program: str, cases: list[tuple[str, str]] = CASES, **extra: Any) -> Sample:
    tests = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases]}
    label = {"grader": "code", "language": language, "tests": tests, "time_limit_s": 2.0}
    label.update(extra)
    fence = toolchain(language).fences[0]  # type: ignore[union-attr]
    return Sample(response=f"Here:\n```{fence}\n{program}```\n", label=json.dumps(label))


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=2, warm_sandboxes=2, compile_time_limit_s=60.0))
    yield grader
    asyncio.run(grader.aclose())


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_outcome_is_its_verdict(grader: CodeGrader, language: str) -> None:
    programs = {kind: program for kind, program in PROGRAMS[language].items() if program is not None}
    results = score(grader, *(sample(language, program) for program in programs.values()))
    for (kind, _), result in zip(programs.items(), results, strict=True):
        assert result.status is Status.OK, (kind, result.detail)
        if kind == "right":
            assert result.reward == 1.0, (kind, result.detail)
            continue
        assert result.reward == 0.0, (kind, result.detail)
        assert EXPECTED[kind] in result.detail, (kind, result.detail)
        assert result.logs["code/compile_error"] == float(kind == "compile"), (kind, result.detail)


def test_a_go_build_leaves_nothing_for_the_runs(grader: CodeGrader) -> None:
    """Go's build cache and GOPATH live in the work dir and go with it: the runs (in the sandbox
    that compiled the program) find none of them."""
    program = 'package main\nimport ("fmt"; "os")\nfunc main() { for _, p := range []string{"/tmp/.gocache", "/tmp/.gopath", "/tmp/main.go", "/tmp/.prog"} { if _, err := os.Stat(p); err == nil { fmt.Println("left:", p); return } }; fmt.Println("clean") }\n'
    if missing(toolchain("go")) is not None:  # type: ignore[arg-type]
        pytest.skip("needs golang-go")
    (result,) = score(grader, sample("go", program, [("", "clean\n"), ("", "clean\n")]))
    assert result.reward == 1.0, result.detail


def test_managed_runtimes_keep_to_the_memory_limit(grader: CodeGrader) -> None:
    """Java's heap and V8's are sized from the label's memory limit: a program over it fails (a
    runtime error, or the memory limit), and one within it passes (256 MB of arrays)."""
    cases = []
    if missing(toolchain("java")) is None:  # type: ignore[arg-type]
        cases.append(
            (
                "java",
                "public class Main { public static void main(String[] a) { long[][] k = new long[32][]; for (int i = 0; i < 32; i++) k[i] = new long[1 << 20]; System.out.println(k.length); } }\n",
            )
        )
    if missing(toolchain("nodejs")) is None:  # type: ignore[arg-type]
        cases.append(
            (
                "nodejs",
                "const k = []; for (let i = 0; i < 32; i++) k.push(new Float64Array(1 << 20).fill(i + 0.5)); console.log(k.length);\n",
            )
        )
    if not cases:
        pytest.skip("needs java or node")
    limits: dict[str, Any] = {"time_limit_s": 10.0}
    over = [sample(lang, program, [("", "32\n")], memory_limit_mb=128, **limits) for lang, program in cases]
    within = [
        sample(lang, program, [("", "32\n")], memory_limit_mb=1024, **limits) for lang, program in cases
    ]
    results = score(grader, *over, *within)
    for result in results[: len(over)]:
        assert result.reward == 0.0 and result.status is Status.OK, result.detail
        assert "runtime error" in result.detail or "memory limit" in result.detail, result.detail
    for result in results[len(over) :]:
        assert result.reward == 1.0, result.detail


def test_the_block_marked_as_the_language_is_the_program(grader: CodeGrader) -> None:
    response = (
        f"```go\n{PROGRAMS['go']['right']}```\nand in Python, for comparison:\n```python\nprint(0)\n```\n"
    )
    if missing(toolchain("go")) is None:  # type: ignore[arg-type]
        label = json.loads(sample("go", "").label)
        (result,) = score(grader, Sample(response=response, label=json.dumps(label)))
        assert result.reward == 1.0, result.detail


def test_a_java_program_in_a_package_runs(grader: CodeGrader) -> None:
    if missing(toolchain("java")) is not None:  # type: ignore[arg-type]
        pytest.skip("needs default-jdk-headless")
    program = "package contest.a;\nimport java.util.*;\nclass Helper { static long add(long a, long b) { return a + b; } }\npublic final class Main { public static void main(String[] x) { Scanner s = new Scanner(System.in); System.out.println(Helper.add(s.nextLong(), s.nextLong())); } }\n"
    (result,) = score(grader, sample("java", program))
    assert result.reward == 1.0, result.detail


def test_function_tests_need_python(grader: CodeGrader) -> None:
    tests = {"kind": "call", "entry_point": "f", "cases": [{"args": [1], "expected": 1}]}
    label = json.dumps({"grader": "code", "language": "rust", "tests": tests})
    (result,) = score(grader, Sample(response="```rust\nfn main() {}\n```", label=label))
    assert result.status is Status.INVALID_INPUT and "stdio" in result.detail


# ---------------------------------------------------------------------------------- /run_code


@pytest.fixture(scope="module")
def rules() -> Iterator[GraderServer]:
    settings = ArbiterSettings.model_validate(
        {
            "reward_rules": {
                "host": "127.0.0.1",
                "http_port": 0,
                "grpc_port": -1,
                "code": {"workers": 2, "warm_sandboxes": 2, "compile_time_limit_s": 60.0},
            }
        }
    )
    loop = asyncio.new_event_loop()
    manager = make_server("reward_rules", settings)
    server = loop.run_until_complete(manager.__aenter__())
    try:
        yield _Served(server, loop)  # type: ignore[misc]
    finally:
        loop.run_until_complete(manager.__aexit__(None, None, None))
        loop.close()


class _Served:
    def __init__(self, server: GraderServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server, self.loop = server, loop

    def run_code(self, code: str, language: str, stdin: str = "", timeout: int = 30) -> dict[str, Any]:
        body = {
            "code": code,
            "language": language,
            "stdin": stdin,
            "compile_timeout": 60,  # javac's JVM is slow to start on a loaded machine
            "run_timeout": timeout,
            "memory_limit_MB": 512,
            "files": {},
            "fetch_files": [],
        }
        return self.loop.run_until_complete(self._post(body))

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{self.server.http_url}/run_code", json=body, timeout=180)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data


@pytest.mark.parametrize("language", LANGUAGES)
def test_run_code_serves_the_language(rules: _Served, language: str) -> None:
    programs = PROGRAMS[language]
    chain = toolchain(language)
    assert chain is not None
    right = rules.run_code(str(programs["right"]), language, "40 2\n")
    assert right["status"] == "Success", right
    assert (right["run_result"]["status"], right["run_result"]["stdout"]) == ("Finished", "42\n")
    if chain.compiled:
        assert (right["compile_result"]["status"], right["compile_result"]["return_code"]) == ("Finished", 0)
        broken = rules.run_code(str(programs["compile"]), language)
        assert broken["status"] == "Failed" and broken["run_result"] is None, broken
        assert broken["compile_result"]["return_code"] not in (0, None), broken
    else:
        assert right["compile_result"] is None
    crash = rules.run_code(str(programs["crash"]), language)
    assert crash["status"] == "Failed", crash
    assert crash["run_result"]["status"] == "Finished" and crash["run_result"]["return_code"] != 0, crash
    loop = rules.run_code(str(programs["loop"]), language, timeout=2)
    assert loop["status"] == "Failed" and loop["run_result"]["status"] == "TimeLimitExceeded", loop


def test_run_code_names_the_languages_it_serves(rules: _Served) -> None:
    data = rules.run_code("print 1", "cobol")
    assert data["status"] == "SandboxError"
    for name in ("python", "cpp", "go", "rust", "java", "nodejs", "bash"):
        assert name in data["message"]
