"""reward_rm settings: its ports, batching that fits each backend, and the config hash."""

from __future__ import annotations

import pytest

from services.common.settings import KitSettings, load_settings
from services.reward_rm.grader import RMGrader
from services.reward_rm.settings import RMServiceSettings
from testkit.tiny_checkpoints import TinyCheckpoints


class _Tree(KitSettings):
    reward_rm: RMServiceSettings = RMServiceSettings()


def test_defaults() -> None:
    settings = RMServiceSettings()
    assert (settings.http_port, settings.grpc_port) == (8102, 9102)
    assert settings.batch.max_concurrent_batches == 1  # a CPU forward uses every core
    assert RMServiceSettings(backend="vllm").batch.max_concurrent_batches > 1  # vLLM batches itself


def test_partial_batch_options_keep_the_backend_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_REWARD_RM__BATCH__MAX_WAIT_MS", "9")
    monkeypatch.setenv("ARBITER_REWARD_RM__CHECKPOINT", "/ckpt/rm")
    settings = load_settings(_Tree).reward_rm
    assert settings.checkpoint == "/ckpt/rm"
    assert settings.batch.max_wait_ms == 9 and settings.batch.max_concurrent_batches == 1


def test_config_hash_follows_what_changes_rewards(tiny: TinyCheckpoints) -> None:
    base = RMGrader(RMServiceSettings(checkpoint=str(tiny.openrlhf))).info
    assert base.name == "rm" and "rm/truncated" in base.log_keys
    same = RMGrader(RMServiceSettings(checkpoint=str(tiny.openrlhf), http_port=1234, token_budget=99)).info
    assert same.config_hash == base.config_hash
    for changed in ({"max_length": 512}, {"normalize": False}, {"checkpoint": str(tiny.hf)}):
        other = RMGrader(RMServiceSettings.model_validate({"checkpoint": str(tiny.openrlhf), **changed})).info
        assert other.config_hash != base.config_hash, changed
