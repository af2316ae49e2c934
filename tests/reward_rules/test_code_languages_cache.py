"""The compile cache keys a compile by its limits, never keeps one a limit stopped, and C++'s
precompiled header changes nothing a program means (through the grader and /run_code)."""

# ruff: noqa: E501  (programs stay one string per line of intent)

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.contract import Sample, Status
from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.code.native import (
    CompileCache,
    NativeBuild,
    cache_key,
    prepare_binary,
    resource_failure,
)
from services.reward_rules.code.pch import PrecompiledHeaders
from services.reward_rules.code.run_code import FusionRunner, RunCodeRequest
from services.reward_rules.code.session import InfrastructureError
from tests.reward_rules.code_fixtures import score

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (Debian g++)")

# <bits/stdc++.h> parsed in full takes cc1plus past 64 MB (about 200 MB at -O2)
HEAVY = '#include <bits/stdc++.h>\nint main() {{ long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }} // {tag}\n'


def cpp(program: str, memory_mb: int, cases: list[tuple[str, str]] | None = None) -> Sample:
    cases = cases or [("1 2\n", "3\n")]
    tests = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases]}
    label = {"grader": "code", "language": "cpp", "tests": tests, "memory_limit_mb": memory_mb}
    return Sample(response=f"```cpp\n{program}```\n", label=json.dumps(label))


@pytest.fixture(scope="module")
def tight() -> Iterator[CodeGrader]:
    """Compiles get only the tests' memory (64 MB at least) and parse the header in full."""
    config = CodeConfig(
        workers=2, warm_sandboxes=1, compile_memory_mb=64, cxx_pch=False, compile_time_limit_s=120.0
    )
    grader = CodeGrader(config)
    yield grader
    asyncio.run(grader.aclose())


def test_a_compile_killed_for_memory_is_not_kept(tight: CodeGrader) -> None:
    program = HEAVY.format(tag="killed")
    cache = tight.compile_cache
    (killed,) = score(tight, cpp(program, 64))
    assert killed.status is Status.OK and killed.reward == 0.0, killed.detail
    assert "compile error" in killed.detail and "memory" in killed.detail, killed.detail
    (fits,) = score(tight, cpp(program, 1024))  # more memory: it compiles, not the cached kill
    assert fits.reward == 1.0, fits.detail
    misses = cache.misses
    (again,) = score(tight, cpp(program, 64))  # compiled again under 64 MB: nothing was kept for it
    assert again.reward == 0.0 and "memory" in again.detail, again.detail
    assert cache.misses == misses + 1
    hits = cache.hits
    (cached,) = score(tight, cpp(program, 1024))  # the one that compiled is kept, for its limits
    assert cached.reward == 1.0 and cache.hits == hits + 1, cached.detail


def test_run_code_cannot_poison_a_source_for_a_label(tight: CodeGrader) -> None:
    """A /run_code call under a small memory limit fails to compile a source; a label that allows
    more memory still gets it compiled (the limits are in the cache key, the kill not kept)."""
    program = HEAVY.format(tag="poison")
    request = RunCodeRequest.model_validate(
        {"code": program, "language": "cpp", "stdin": "1 2\n", "memory_limit_MB": 64, "compile_timeout": 120}
    )
    data = FusionRunner(tight).run(request)
    assert data["status"] == "Failed" and data["run_result"] is None, data
    assert data["compile_result"]["return_code"] not in (0, None), data
    (result,) = score(tight, cpp(program, 1024))
    assert result.reward == 1.0, result.detail


def test_the_cache_key_holds_the_limits() -> None:
    argv = ["/usr/bin/g++", "-O2"]
    base = cache_key("int main(){}", argv, None, (64 << 20, 10.0))
    assert base == cache_key("int main(){}", argv, None, (64 << 20, 10.0))
    assert base != cache_key("int main(){}", argv, None, (512 << 20, 10.0))
    assert base != cache_key("int main(){}", argv, None, (64 << 20, 20.0))
    assert base != cache_key("int main(){}", [*argv, "-I", "/x"], None, (64 << 20, 10.0))


@pytest.mark.parametrize(
    ("stderr", "resource"),
    [
        (b"g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n", True),
        (b"virtual memory exhausted: Cannot allocate memory\n", True),
        (b'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n', True),
        (b"fatal error: runtime: out of memory\n", True),
        (b"memory allocation of 1048576 bytes failed\n", True),
        (b"g++: fatal error: cannot fork: Resource temporarily unavailable\n", True),
        (b"main.cpp:1:20: error: 'x' was not declared in this scope\n", False),
        (b"./main.go:2:19: syntax error: unexpected }\n", False),
    ],
)
def test_what_a_limit_stopped_is_told_from_a_compile_error(stderr: bytes, resource: bool) -> None:
    assert resource_failure(stderr) is resource


# ---------------------------------------------------------------------------------- precompiled header


@pytest.fixture(scope="module")
def fast() -> Iterator[CodeGrader]:
    grader = CodeGrader(CodeConfig(workers=2, warm_sandboxes=1, compile_time_limit_s=120.0))
    grader._pch.build(block=True)  # built once per host and flags (kept under /var/tmp)
    yield grader
    asyncio.run(grader.aclose())


def test_compiles_load_the_precompiled_header(fast: CodeGrader) -> None:
    assert fast._pch.ready(), fast._pch.error
    flags = fast.native_build("cpp").argv
    assert flags[-2:] == ["-I", str(fast._pch.directory)]
    assert (Path(flags[-1]) / "bits" / "stdc++.h.gch").is_file()
    (result,) = score(fast, cpp(HEAVY.format(tag="pch"), 256, [("1 2\n", "3\n"), ("40 2\n", "42\n")]))
    assert result.reward == 1.0, result.detail


def test_a_program_the_header_would_change_compiles_as_written(fast: CodeGrader) -> None:
    """A macro set before the include (here libstdc++'s debug mode) makes the precompiled header
    invalid for that source: GCC reads the header itself, and the program is what it says (its
    out-of-range read is caught: a runtime error, not an answer)."""
    debug = "#define _GLIBCXX_DEBUG\n#include <bits/stdc++.h>\nint main() { std::vector<int> v(1); std::cout << v[5] << std::endl; }\n"
    (result,) = score(fast, cpp(debug, 256, [("", "0\n")]))
    assert result.status is Status.OK and result.reward == 0.0, result.detail
    assert "runtime error" in result.detail, result.detail
    macro = "#define MOD 1000000007LL\n#include <bits/stdc++.h>\nint main() { std::cout << (1LL << 40) % MOD << std::endl; }\n"
    (result,) = score(fast, cpp(macro, 256, [("", f"{(1 << 40) % 1000000007}\n")]))
    assert result.reward == 1.0, result.detail


def test_the_header_is_built_once_per_flags(tmp_path: Path) -> None:
    root = tmp_path / "pch"
    one = PrecompiledHeaders("/usr/bin/g++", ["-std=c++17", "-O2"], root)
    two = PrecompiledHeaders("/usr/bin/g++", ["-std=c++17", "-O1"], root)
    assert one.directory != two.directory and one.include_flags() == []
    root.mkdir(mode=0o777)
    root.chmod(0o777)  # writable by others: never trusted
    assert one.usable_root() is None


class _RlimitSandbox:
    cgroup = None  # a local sandbox whose memory limit is an address-space rlimit


class _Session:
    program = "public class Main { public static void main(String[] a) {} }\n"
    memory_bytes = 256 << 20
    sandbox: _RlimitSandbox | None = None

    def start(self) -> None:
        self.sandbox = _RlimitSandbox()


@pytest.mark.parametrize("language", ["java", "go", "nodejs"])
def test_a_runtime_that_needs_a_memory_cgroup_is_no_verdict_without_one(language: str) -> None:
    """The JVM, V8 and Go reserve more address space than they use: under the rlimit that stands
    in for a memory cgroup they cannot start, which says nothing of the program (GRADER_ERROR)."""
    build = NativeBuild(CompileCache(1 << 20), ["/usr/bin/g++"], 10.0, 1 << 20, 1 << 30, language)
    with pytest.raises(InfrastructureError, match="cgroup"):
        prepare_binary(_Session(), build, time.monotonic())  # type: ignore[arg-type]
