"""Imports run downhill (docs/architecture.md): the services never import what sits on top of them.

- nothing under services/ imports deploy/, bench/, tests/ or testkit/ (deployment recipes, benches
  and test helpers use the services, never the other way round);
- no service package imports the CLI (services start through services/serving.py);
- services/common (the kit) imports no service package;
- the trainer adapters import no server machinery (they run inside the trainer's processes).
Read with `ast`, so an import inside a function counts too.
"""

from __future__ import annotations

import ast
import re
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


def offending(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for name in imports(path):
            if any(name == bad or name.startswith(bad + ".") for bad in forbidden):
                found.append(f"{path.relative_to(ROOT)}: {name}")
    return found


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


def test_the_kit_imports_no_service() -> None:
    services = tuple(f"services.{name}" for name in (*SERVICE_PACKAGES, "catalog", "settings", "cli"))
    assert offending(ROOT / "services" / "common", services) == []


def test_the_trainer_adapters_import_no_server_machinery() -> None:
    heavy: tuple[str, ...] = (
        "services.common.engine",
        "services.common.server",
        "services.common.http_app",
        "fastapi",
    )
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
    """Every engine comes from services/common/engine.assemble_engine: the server, the catalog,
    the eval tool and Ray Serve cannot each wire cache, metrics and observers their own way."""
    sites = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "services").rglob("*.py"))
        for line in engine_constructions(path)
    ]
    assert len(sites) == 1 and sites[0].startswith("services/common/engine.py:"), sites
