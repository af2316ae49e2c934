"""Imports run downhill (docs/architecture.md): the services never import what sits on top of them.

- nothing under services/ imports deploy/, bench/, tests/ or testkit/ (deployment recipes, benches
  and test helpers use the services, never the other way round);
- no service package imports the CLI (services start through services/launch.py);
- the contract (the `arbiter` package in client/, what a trainer installs, adapters included)
  imports nothing of this repo and no web server; each distribution installs only its package;
- the shared rooms import one way: services/common imports no other room; textstats imports only
  common; scoring never imports transports; no room imports a service package;
- grader packages import neither a web framework nor a transport;
- the code grader's sandbox backends live in code/backends/ and never import the grading logic;
- the trainer adapters import no server machinery (they run inside the trainer's processes), and
  trainer/'s by-path entry files only re-export them.
Read with `ast`, so an import inside a function counts too.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICE_PACKAGES = ("gateway", "reward_rules", "reward_rm", "judge_proxy", "evaluate", "episodes")


def imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def offending_file(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {name}"
        for name in imports(path)
        if any(name == bad or name.startswith(bad + ".") for bad in forbidden)
    ]


def offending(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    return [hit for path in sorted(folder.rglob("*.py")) for hit in offending_file(path, forbidden)]


def test_services_import_nothing_from_deploy_bench_tests_or_testkit() -> None:
    assert offending(ROOT / "services", ("deploy", "bench", "tests", "testkit")) == []


@pytest.mark.parametrize("package", SERVICE_PACKAGES)
def test_no_service_package_imports_the_cli(package: str) -> None:
    assert offending(ROOT / "services" / package, ("services.cli",)) == []


# Packages that grade: they see samples and results, never a transport (docs/architecture.md).
GRADER_PACKAGES = (
    "reward_rules/math",
    "reward_rules/code",
    "reward_rm/backends",
    "judge_proxy",
    "episodes/environments",
)
WEB_AND_RPC = ("fastapi", "starlette", "uvicorn", "grpc", "aiohttp.web")


@pytest.mark.parametrize("package", GRADER_PACKAGES)
def test_grader_packages_import_no_web_framework(package: str) -> None:
    assert offending(ROOT / "services" / package, WEB_AND_RPC) == []


# The rooms the services share (docs/architecture.md), each allowed only the rooms below it.
ROOMS = ("common", "textstats", "scoring", "transports")
ON_TOP = ("catalog", "settings_tree", "cli", "launch", "ray_serve", "probe", "config_reference")
ABOVE_ROOMS = tuple(f"services.{name}" for name in (*SERVICE_PACKAGES, *ON_TOP))


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_imports_only_the_rooms_below_it(room: str) -> None:
    above = tuple(f"services.{name}" for name in ROOMS[ROOMS.index(room) + 1 :])
    assert offending(ROOT / "services" / room, above + ABOVE_ROOMS) == []


def test_scoring_never_imports_a_transport() -> None:
    assert offending(ROOT / "services" / "scoring", ("services.transports", *WEB_AND_RPC)) == []


CLIENT = ROOT / "client"


def test_the_contract_imports_nothing_of_this_repo() -> None:
    """`arbiter` is what a trainer installs: the services import it, never the other way round."""
    repo = ("services", "trainer", "deploy", "testkit", "tests", "bench")
    assert offending(CLIENT / "arbiter", (*repo, "fastapi", "starlette", "uvicorn", "aiohttp.web")) == []


def test_each_distribution_installs_only_its_own_package() -> None:
    """The services' distribution installs `services` only (never trainer/ or deploy/, names a
    trainer's repo may use); the client's installs `arbiter` only."""
    for pyproject, package in ((ROOT / "pyproject.toml", "services"), (CLIENT / "pyproject.toml", "arbiter")):
        found = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"]["find"]
        assert found == {"include": [f"{package}*"]}, pyproject


def test_trainer_entry_files_only_point_at_the_adapters() -> None:
    """trainer/ holds recipes and the files a framework loads by path: each only re-exports an
    adapter, so the adapter code lives once, in the client."""
    for path in sorted((ROOT / "trainer").glob("*.py")):
        names = [name for name in imports(path) if name != "__future__"]
        assert all(name.startswith("arbiter.adapters") for name in names), (path, names)


@pytest.mark.parametrize("package", GRADER_PACKAGES)
def test_grader_packages_import_no_transport(package: str) -> None:
    assert offending(ROOT / "services" / package, ("services.transports",)) == []


CODE = ROOT / "services" / "reward_rules" / "code"
# What the backends may use of the code grader: the languages' runners and the in-sandbox harness.
BACKEND_MAY_USE = ("backends", "runner", "harness", "config", "languages")


def test_the_sandbox_backends_live_in_backends() -> None:
    backend_modules = ("pool", "sandbox", "reuse", "cgroups", "seccomp", "sandboxfusion")
    assert [name for name in backend_modules if (CODE / f"{name}.py").exists()] == []
    assert all((CODE / "backends" / "bwrap" / f"{name}.py").exists() for name in backend_modules[:5])


def test_the_sandbox_backends_never_import_the_grading_logic() -> None:
    grading = tuple(
        f"services.reward_rules.code.{path.stem}"
        for path in sorted(CODE.glob("*.py"))
        if path.stem not in (*BACKEND_MAY_USE, "__init__")
    )
    found = [
        hit
        for path in sorted((CODE / "backends").rglob("*.py"))
        if path.name != "factory.py"  # the factory assembles what a backend serves (label-run pools)
        for hit in offending_file(path, grading)
    ]
    assert found == []


def test_the_trainer_adapters_import_no_server_machinery() -> None:
    heavy: tuple[str, ...] = ("services.scoring", "services.transports", "fastapi")
    heavy += tuple(f"services.{name}" for name in SERVICE_PACKAGES)
    assert offending(ROOT / "trainer", heavy) == []


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from deploy.ray_serve import x\n")
    assert list(imports(module)) == ["deploy.ray_serve", "deploy.ray_serve.x"]


# Issue numbers mean nothing to a reader of the repo: docs, docstrings and comments say the reason.
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\s*\d", re.IGNORECASE)
GENERATED = ("docs/configuration.md",)  # generated from the settings' descriptions (checked in services/)


def issue_references(root: Path, folders: tuple[str, ...]) -> Iterator[str]:
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            name = path.relative_to(root).as_posix()
            if not path.is_file() or "__pycache__" in path.parts or name in GENERATED:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if ISSUE_NUMBER.search(line):
                    yield f"{name}:{number}: {line.strip()}"


def test_docs_tests_and_services_name_no_issue_numbers() -> None:
    found = list(issue_references(ROOT, ("docs", "tests", "services")))
    assert found == [], "say the reason instead of the issue number:\n" + "\n".join(found)


def test_the_issue_number_check_sees_every_form(tmp_path: Path) -> None:
    word = "issue"
    caught = [
        f"({word} 20, item 4)",
        f"{word.upper()}S 15 and 20",
        f"see {word} #7",
        f"{word}#12",
        f"{word.title()} 17.3:",
    ]
    passed = [f"t{word} 5", f"where the {word} measured 0.4x", f"it {word}s a warning", f"{word} numbers"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("\n".join(caught + passed) + "\n")
    (tmp_path / "docs" / "configuration.md").write_text(caught[0] + "\n")
    (tmp_path / "docs" / "blob.bin").write_bytes(b"\xff\xfe" + caught[0].encode())
    found = list(issue_references(tmp_path, ("docs",)))
    assert found == [f"docs/page.md:{n}: {line}" for n, line in enumerate(caught, 1)]


def engine_constructions(path: Path) -> Iterator[int]:
    """Lines calling an engine class (`...Engine(`) or an `engine_type(`."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name.endswith("Engine") or name == "engine_type":
                yield node.lineno


def test_engines_are_assembled_in_one_place() -> None:
    """Every engine comes from services/scoring/engine.assemble_engine: the server, the catalog,
    the eval tool and Ray Serve cannot each wire cache, metrics and observers their own way."""
    sites = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "services").rglob("*.py"))
        for line in engine_constructions(path)
    ]
    assert len(sites) == 1 and sites[0].startswith("services/scoring/engine.py:"), sites


# One word per concept (docs/architecture.md, "Glossary"): names that once meant two things.
RETIRED_NAMES = {
    "service.py": "a package's build.py builds its grader",
    "serving.py": "services/launch.py starts services in processes",
    "grpc_server.py": "transports/grpc_app.py is the gRPC face, transports/server.py the GraderServer",
    "outputs.py": "evaluate/summary.py writes the summary and report",
    "outfiles.py": "evaluate/targets.py checks the files a command writes",
    "writer.py": "evaluate/resumable_jsonl.py appends the scored rows",
    "compare.py": "evaluate/compare_runs.py compares runs, code/output_match.py outputs",
}


def test_one_name_per_concept() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {RETIRED_NAMES[path.name]}"
        for path in sorted((ROOT / "services").rglob("*.py"))
        if path.name in RETIRED_NAMES
    ]
    # "judge" is the LLM judge (judge_proxy/) only; a label's test code runs in a label sandbox.
    found += [
        f"{path.relative_to(ROOT)}: judge means the LLM judge"
        for path in sorted((ROOT / "services").rglob("*judge*.py"))
        if "judge_proxy" not in path.parts
    ]
    # settings.py is one section's models; the tree of all sections is services/settings_tree.py.
    found += [f"{path.relative_to(ROOT)}" for path in [ROOT / "services" / "settings.py"] if path.exists()]
    found += [
        f"{path.relative_to(ROOT)}"
        for path in [ROOT / "services" / "evaluate" / "metrics.py"]
        if path.exists()
    ]
    assert found == []
