"""Settings: defaults, YAML, env over YAML, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.settings import SettingsError
from services.settings_tree import ArbiterSettings, load


def test_defaults_are_the_embedded_local_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARBITER_CONFIG", raising=False)
    settings = load()
    assert settings.cache.backend == "memory"
    assert settings.reward_rules.host == "127.0.0.1"
    assert settings.reward_rules.deadline_s < 180  # well inside OpenRLHF's client timeout


def test_yaml_then_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "arbiter.yaml"
    config.write_text(
        "reward_rules:\n  http_port: 7001\n  format:\n    max_length: 512\n"
        "cache:\n  backend: redis\n  redis_url: redis://example:6379/1\n"
    )
    settings = load(config)
    assert settings.reward_rules.http_port == 7001
    assert settings.reward_rules.format.max_length == 512
    assert settings.cache.redis_url == "redis://example:6379/1"
    monkeypatch.setenv("ARBITER_REWARD_RULES__HTTP_PORT", "7002")
    monkeypatch.setenv("ARBITER_CONFIG", str(config))
    settings = load()
    assert settings.reward_rules.http_port == 7002  # env wins over the file
    assert settings.reward_rules.format.max_length == 512


def test_bad_values_name_the_field_and_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("cache:\n  backend: memory\nreward_rules:\n  format:\n    max_length: lots\n")
    with pytest.raises(SettingsError, match=r"bad\.yaml:5: reward_rules\.format\.max_length"):
        load(config)
    config.write_text("reward_rulez: {}\n")
    with pytest.raises(SettingsError, match=r"bad\.yaml:1: reward_rulez"):
        load(config)
    config.write_text("reward_rules: [unclosed\n")
    with pytest.raises(SettingsError, match="not valid YAML"):
        load(config)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.yaml")


def test_env_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_REWARD_RULES__BATCH__MAX_BATCH_SIZE", "7")
    monkeypatch.setenv("ARBITER_CACHE__BACKEND", "none")
    settings = ArbiterSettings()
    assert settings.reward_rules.batch.max_batch_size == 7
    assert settings.cache.backend == "none"


def test_the_trainers_gateway_address_is_not_a_settings_section(monkeypatch: pytest.MonkeyPatch) -> None:
    # The trainer adapters read ARBITER_GATEWAY=host:port; the same shell may start `arbiter serve`.
    monkeypatch.setenv("ARBITER_GATEWAY", "127.0.0.1:9100")
    monkeypatch.setenv("ARBITER_GATEWAY__HTTP_PORT", "8111")
    settings = load()
    assert settings.gateway.http_port == 8111
