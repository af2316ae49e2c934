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
