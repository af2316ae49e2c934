"""docs/configuration.md is the settings models' own reference: it fails when the two drift."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from services.cli import app
from services.config_reference import configuration_markdown, defaults_yaml
from services.settings_tree import ArbiterSettings

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_the_committed_page_is_the_generated_one() -> None:
    assert PAGE.read_text(encoding="utf-8") == configuration_markdown(), (
        "docs/configuration.md is stale: run `arbiter config --defaults --markdown > docs/configuration.md`"
    )


def test_the_defaults_are_a_valid_settings_file_equal_to_the_models_defaults() -> None:
    tree = yaml.safe_load(defaults_yaml())
    assert ArbiterSettings.model_validate(tree).model_dump() == ArbiterSettings.model_construct().model_dump()


def test_descriptions_are_comments_above_their_field() -> None:
    lines = defaults_yaml().splitlines()
    index = lines.index("  # 0 picks a free port, -1 disables gRPC")
    assert lines[index + 1].strip().startswith("grpc_port:")


def test_the_cli_prints_the_defaults_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_GATEWAY__HTTP_PORT", "18100")
    runner = CliRunner()
    defaults = runner.invoke(app, ["config", "--defaults"])
    assert defaults.exit_code == 0, defaults.output
    assert "  http_port: 8100\n" in defaults.output
    effective = runner.invoke(app, ["config"])
    assert effective.exit_code == 0, effective.output
    assert "  http_port: 18100\n" in effective.output
