"""The languages the code grader and `/run_code` serve: one table of toolchains, nothing else.

Each language is a `Toolchain` row: the names a label or request may give it, the Markdown fence
info strings that mark its code block, the Debian package its tools come from, how its source
is named in the sandbox, how it is compiled (an argv template: run by the harness in the sample's
own sandbox, under its limits, cached by native.py) and how a test runs it (an argv template: the
harness execs it with the program, compiled or not, as a sealed memfd on fd 3). Python is the one
row that runs in the harness itself (a fork of it: function tests call into the program).

Everything the other modules need is derived from this table: the language names
(`canonical`), fences (extract.py), which languages take function tests, the compile and run
commands (`compile_command`, `run_command`), and the host paths a toolchain needs inside the
sandbox besides /usr (`sandbox_paths`: the JDK's configuration under /etc).

Tools are looked up under the sandbox's PATH (/usr/bin:/bin) and used by their real path: the
sandbox binds /usr and not /etc/alternatives, so /usr/bin/java (a link through
/etc/alternatives) must be named by what it points to. A tool missing from the host makes the
language's samples a GRADER_ERROR naming the package to install, never the program's verdict.

Templates: `{name}` parts are filled in (`{go}`: the tool `go`'s real path; `{source}`,
`{output}`, `{main}`: Java's class; `{heap_mb}`, `{memory_mb}`: from the run's memory limit;
`{cwd}`: the sandbox's work dir, left for the harness); the one part `{cxx_flags}` stands for the
configured C++ flags (a list). `{program}` in a run is the program.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass

SANDBOX_PATH = "/usr/bin:/bin"  # the sandbox's PATH (sandbox._ENV)
PROGRAM = "{program}"  # in a run template: the program, as /proc/self/fd/3 (a sealed memfd)
BINARY = ".prog"  # a compile's output file (harness.BINARY_NAME)
CLASSES = ".classes"  # Java's compile output: a directory, zipped by the harness into a jar


class ToolchainMissing(Exception):
    """A language's tools are not on this host: an infrastructure problem, never the program's."""


@dataclass(frozen=True)
class Toolchain:
    name: str
    aliases: tuple[str, ...]  # what a label's `language` or a request's may say (lower case)
    fences: tuple[str, ...]  # Markdown info strings that mark a code block as this language
    package: str  # the Debian package(s) that bring its tools
    tools: tuple[str, ...]  # executables its templates name, looked up under SANDBOX_PATH
    source: str  # the source's file name in the sandbox ("{main}.java": Java's public class)
    compile: tuple[str, ...] = ()  # () : the source is the program (an interpreter runs it)
    output: str = BINARY  # what the compile leaves: a file, or a directory (zipped)
    run: tuple[str, ...] = (PROGRAM,)  # (PROGRAM,): the compiled binary itself
    in_harness: bool = False  # Python: runs in a fork of the harness; function tests too
    etc_dirs: tuple[str, ...] = ()  # files (from a tool's directory) whose real dirs the sandbox needs
    # Its runtime (or compiler) reserves far more address space than it uses (the JVM's code
    # cache and class space, V8's code range, Go's arenas): it cannot start under the address-space
    # rlimit that stands in for a memory cgroup where none is writable, only under the cgroup.
    needs_memory_cgroup: bool = False

    @property
    def compiled(self) -> bool:
        return bool(self.compile)

    @property
    def function_tests(self) -> bool:
        return self.in_harness


# Go: the build cache and GOPATH in the work dir, which the harness empties after the compile
# (nothing of one request's build is left for the next); no network, no cgo, no modules.
_GO_ENV = (
    "/usr/bin/env",
    "GOCACHE={cwd}/.gocache",
    "GOPATH={cwd}/.gopath",
    "GO111MODULE=off",
    "GOPROXY=off",
    "GOFLAGS=",
    "CGO_ENABLED=0",
    "GOTOOLCHAIN=local",
)
# The JVM: one GC thread and one JIT thread family (a sandbox's process count is bounded), no
# /tmp/hsperfdata files, the class-data archive where the JDK ships one.
_JVM = ("-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xshare:auto", "-XX:ActiveProcessorCount=1")

TOOLCHAINS: tuple[Toolchain, ...] = (
    Toolchain(
        name="python",
        aliases=("python", "py", "python3"),
        fences=("python", "py", "python3"),
        package="python3",
        tools=(),
        source="solution.py",
        in_harness=True,
    ),
    Toolchain(
        name="cpp",
        aliases=("cpp", "c++", "cxx"),
        fences=("cpp", "c++", "cc", "cxx"),
        package="g++",
        tools=(),  # the configured compiler (reward_rules.code.cxx)
        source="main.cpp",
        compile=("{cxx}", "{cxx_flags}", "-o", "{output}", "{source}"),
    ),
    Toolchain(
        name="go",
        aliases=("go", "golang"),
        fences=("go", "golang"),
        package="golang-go",
        tools=("go",),
        source="main.go",
        compile=(*_GO_ENV, "{go}", "build", "-p", "1", "-ldflags=-s -w", "-o", "{output}", "{source}"),
        # the garbage collector told the memory limit: it collects before the sandbox's limit
        run=("/usr/bin/env", "GOMEMLIMIT={heap_mb}MiB", PROGRAM),
        needs_memory_cgroup=True,
    ),
    Toolchain(
        name="rust",
        aliases=("rust", "rs"),
        fences=("rust", "rs"),
        package="rustc",
        tools=("rustc", "cc"),
        source="main.rs",
        compile=(
            "{rustc}",
            "-O",
            "--edition",
            "2021",
            "-C",
            "linker={cc}",  # /usr/bin/cc is a link through /etc/alternatives
            "-C",
            "codegen-units=1",  # one codegen thread: the sandbox's process count is bounded
            "-C",
            "strip=symbols",
            "-o",
            "{output}",
            "{source}",
        ),
    ),
    Toolchain(
        name="java",
        aliases=("java",),
        fences=("java",),
        package="default-jdk-headless",
        tools=("javac", "java"),
        source="{main}.java",
        compile=(
            "{javac}",
            *(f"-J{flag}" for flag in _JVM),
            "-J-XX:TieredStopAtLevel=1",  # javac runs once: the quick JIT only
            "-J-Xmx{heap_mb}m",
            "-proc:none",  # no annotation processors found on the class path
            "-encoding",
            "UTF-8",
            "-d",
            "{output}",
            "{source}",
        ),
        output=CLASSES,
        run=("{java}", *_JVM, "-Xmx{heap_mb}m", "-Xss64m", "-cp", PROGRAM, "{entry}"),
        etc_dirs=("../lib/jvm.cfg",),  # the JDK's conf files link into /etc/java-<N>-openjdk
        needs_memory_cgroup=True,
    ),
    Toolchain(
        name="nodejs",
        aliases=("nodejs", "node", "javascript", "js"),
        fences=("javascript", "js", "node", "nodejs"),
        package="nodejs",
        tools=("node",),
        source="main.js",
        # --preserve-symlinks-main: node resolves its script's real path, which a memfd lacks
        run=("{node}", "--max-old-space-size={heap_mb}", "--preserve-symlinks-main", PROGRAM),
        needs_memory_cgroup=True,
    ),
    Toolchain(
        name="bash",
        aliases=("bash", "sh", "shell"),
        fences=("bash", "sh", "shell"),
        package="bash",
        tools=("bash",),
        source="main.sh",
        run=("{bash}", PROGRAM),
    ),
)

_BY_ALIAS = {alias: chain for chain in TOOLCHAINS for alias in chain.aliases}
NAMES = tuple(chain.name for chain in TOOLCHAINS)
FENCES = {chain.name: chain.fences for chain in TOOLCHAINS}


def toolchain(language: str) -> Toolchain | None:
    """The row for a label's or request's `language` (any alias, any case); None: not served."""
    return _BY_ALIAS.get(language.strip().lower())


def canonical(language: str) -> str | None:
    chain = toolchain(language)
    return chain.name if chain is not None else None


@functools.cache
def tool_path(name: str) -> str | None:
    """A tool's real path under the sandbox's PATH, if it is an executable under /usr (or /bin)."""
    found = shutil.which(name, path=SANDBOX_PATH)
    if found is None:
        return None
    real = os.path.realpath(found)
    return real if real.startswith(("/usr/", "/bin/")) and os.access(real, os.X_OK) else None


def missing(chain: Toolchain) -> str | None:
    """What is missing for a language on this host, in words a person can act on; None: nothing."""
    absent = [tool for tool in chain.tools if tool_path(tool) is None]
    if not absent:
        return None
    tools = ", ".join(absent)
    return f"the {chain.name} toolchain ({tools}) is not on this host (apt-get install {chain.package})"


def sandbox_paths() -> tuple[str, ...]:
    """Host directories outside /usr that an installed toolchain reads (bound read-only)."""
    paths: list[str] = []
    for chain in TOOLCHAINS:
        for tool in chain.tools:
            real = tool_path(tool)
            if real is None:
                continue
            for relative in chain.etc_dirs:
                target = os.path.realpath(os.path.join(os.path.dirname(real), relative))
                where = os.path.dirname(target)
                if os.path.exists(target) and not where.startswith("/usr/") and where not in paths:
                    paths.append(where)
    return tuple(paths)


# Java: the file must be named after its public class, and `java` run on the class with main().
_NAME = r"class\s+([A-Za-z_$][\w$]*)"
_PUBLIC_CLASS = re.compile(r"^\s*public\s+(?:(?:final|abstract|strictfp)\s+)*" + _NAME, re.M)
_ANY_CLASS = re.compile(r"^\s*(?:(?:public|final|abstract|strictfp)\s+)*" + _NAME, re.M)


_PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*;", re.M)


def entry_class(source: str) -> str:
    """The class `java` runs: the main class, qualified by the source's package if it names one."""
    package = _PACKAGE.search(source)
    return f"{package.group(1)}.{main_class(source)}" if package else main_class(source)


def main_class(source: str) -> str:
    """The program's main class: its public top-level class, else its first class, else Main."""
    found = _PUBLIC_CLASS.search(source) or _ANY_CLASS.search(source)
    return found.group(1) if found else "Main"


def heap_mb(memory_bytes: int) -> int:
    """What a managed runtime (JVM, V8, Go's collector) may take of a sandbox's memory limit: the
    rest is the runtime's own code, stacks and metadata, so a program over its heap gets the
    runtime's out-of-memory error rather than the sandbox's kill."""
    memory_mb = memory_bytes >> 20
    return max(16, min(memory_mb * 3 // 4, memory_mb - 48))


def _values(chain: Toolchain, source: str, memory_bytes: int, cxx: str = "") -> dict[str, str]:
    values = {
        "source": source_name(chain, source),
        "output": chain.output,
        "main": main_class(source) if chain.name == "java" else "",
        "entry": entry_class(source) if chain.name == "java" else "",
        "heap_mb": str(heap_mb(memory_bytes)),
        "memory_mb": str(memory_bytes >> 20),
        "cxx": cxx,
        "cwd": "{cwd}",  # the work dir, filled in by the harness (unsafe mode's is not /tmp)
    }
    for tool in chain.tools:
        values[tool] = tool_path(tool) or tool
    return values


def _fill(template: tuple[str, ...], values: dict[str, str], cxx_flags: list[str]) -> list[str]:
    argv: list[str] = []
    for part in template:
        if part == "{cxx_flags}":
            argv += cxx_flags
        elif part == PROGRAM:
            argv.append(part)
        else:
            argv.append(part.format(**values))
    return argv


def source_name(chain: Toolchain, source: str) -> str:
    return chain.source.format(main=main_class(source)) if "{main}" in chain.source else chain.source


def compile_command(
    chain: Toolchain, source: str, memory_bytes: int, cxx: str = "", cxx_flags: list[str] | None = None
) -> list[str]:
    """The compile's argv in the sandbox (`memory_bytes`: the compile's memory limit)."""
    return _fill(chain.compile, _values(chain, source, memory_bytes, cxx), cxx_flags or [])


def run_command(chain: Toolchain, source: str, memory_bytes: int) -> list[str]:
    """A test run's argv (`{program}` left for the harness); [] for a binary run as itself."""
    if chain.run == (PROGRAM,):
        return []
    return _fill(chain.run, _values(chain, source, memory_bytes), [])
