"""What the deployment files must agree with, read from the package itself: the settings tree,
the service entry points, the HTTP routes, and a small Dockerfile reader."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, create_model

from services.common.settings import KitSettings, load_settings
from services.gateway.stats import RollingStats
from services.scoring.engine import ScoringEngine
from services.settings_tree import ArbiterSettings
from services.transports.http_app import build_http_app
from tests.helpers import ScriptedGrader, server_settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def settings_model() -> type[KitSettings]:
    """The settings tree the containers load; reward_rm joins it here until it is registered."""
    if "reward_rm" in ArbiterSettings.model_fields:
        return ArbiterSettings
    from services.reward_rm.settings import RMServiceSettings

    extended: type[KitSettings] = create_model(
        "DeploySettings",
        __base__=ArbiterSettings,
        reward_rm=(RMServiceSettings, Field(default_factory=RMServiceSettings)),
    )
    return extended


def env_field_problem(name: str, model: type[BaseModel]) -> str | None:
    """Why ARBITER_<SECTION>__<FIELD>... names no field of the settings tree (None: it does)."""
    if not name.startswith("ARBITER_"):
        return None
    if name == "ARBITER_CONFIG":
        return None
    current: type[BaseModel] | None = model
    for part in name.removeprefix("ARBITER_").lower().split("__"):
        if current is None:
            return f"{name}: {part!r} is below a field that has no sub-fields"
        if part not in current.model_fields:
            return f"{name}: {current.__name__} has no field {part!r}"
        annotation = current.model_fields[part].annotation
        current = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return None


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def compose_default(value: str) -> str:
    """`${VAR:-default}` as compose interpolates it with VAR unset: the default."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def load_container_settings(config: Path, env: Mapping[str, str]) -> KitSettings:
    """The settings a container builds from the mounted config plus its ARBITER_* variables."""
    arbiter_env = {
        k: compose_default(v) for k, v in env.items() if k.startswith("ARBITER_") and k != "ARBITER_CONFIG"
    }
    with environment(arbiter_env):
        return load_settings(settings_model(), config)


def service_module(argv: list[str]) -> str:
    """`python -m services.<name>` -> name; the module must exist in the package."""
    assert len(argv) >= 3 and Path(argv[0]).name.startswith("python") and argv[1] == "-m", argv
    module = argv[2]
    assert importlib.util.find_spec(module) is not None, f"no module {module}"
    return module


def service_of(argv: list[str]) -> str | None:
    """The Arbiter service a command serves, or None for a helper (the vLLM launcher)."""
    module = service_module(argv)
    match = re.fullmatch(r"services\.(\w+)", module)
    return match.group(1) if match else None


def http_paths() -> set[str]:
    """Every path the gateway's HTTP app serves (the kit's routes plus /v1/stats)."""
    engine = ScoringEngine(ScriptedGrader(), server_settings())
    app = build_http_app(engine, routers=[RollingStats(16).router()])
    return {getattr(route, "path", "") for route in app.routes}


# -- Dockerfile ---------------------------------------------------------------------------------


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def last(self, keyword: str) -> str | None:
        found = self.all(keyword)
        return found[-1] if found else None


def read_dockerfile(path: Path) -> dict[str, Stage]:
    """Stages by name (FROM ... AS name), each with its (KEYWORD, arguments) lines."""
    text = re.sub(r"\\\n", " ", path.read_text())
    stages: dict[str, Stage] = {}
    current: Stage | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            parts = args.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else f"stage{len(stages)}"
            current = stages[name] = Stage(name, parts[0])
            continue
        if current is not None:
            current.instructions.append((keyword, args.strip()))
    return stages


def inherited(stages: dict[str, Stage], name: str) -> list[Stage]:
    """The stage and its ancestors within the file, nearest first."""
    chain = []
    while name in stages:
        chain.append(stages[name])
        name = stages[name].base
    return chain


def exec_form(args: str) -> list[str]:
    import json

    value: Any = json.loads(args) if args.startswith("[") else shlex.split(args)
    assert isinstance(value, list)
    return [str(v) for v in value]


def env_names(stage_args: list[str]) -> set[str]:
    """Names set by ENV lines (KEY=value forms)."""
    names: set[str] = set()
    for args in stage_args:
        for token in shlex.split(args):
            if "=" in token:
                names.add(token.split("=", 1)[0])
    return names
