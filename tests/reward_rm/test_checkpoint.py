"""Reading checkpoints: the two supported kinds, and clear refusals for everything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.reward_rm.checkpoint import CheckpointError, read_checkpoint
from testkit.tiny_checkpoints import TinyCheckpoints


def write_config(root: Path, **config: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config))
    return root


def test_openrlhf_and_hf_checkpoints(tiny: TinyCheckpoints) -> None:
    openrlhf = read_checkpoint(tiny.openrlhf)
    assert (openrlhf.kind, openrlhf.model_type, openrlhf.value_head_prefix) == ("openrlhf", "llama", "score")
    assert openrlhf.normalize_reward and (openrlhf.mean, openrlhf.std) == (tiny.mean, tiny.std)
    hf = read_checkpoint(tiny.hf)
    assert (hf.kind, hf.architecture, hf.normalize_reward) == (
        "hf_classification",
        "LlamaForSequenceClassification",
        False,
    )
    assert openrlhf.fingerprint != hf.fingerprint
    assert read_checkpoint(tiny.openrlhf, value_head_prefix="value_head").value_head_prefix == "value_head"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "not a reward model"),
        (
            {"architectures": ["LlamaForSequenceClassification"], "model_type": "llama", "num_labels": 2},
            "2 labels",
        ),
        ({"architectures": ["RewardModel"]}, "no model_type"),
        ({"architectures": ["RewardModel"], "model_type": "llama", "std": 0}, "cannot normalize"),
    ],
)
def test_unservable_checkpoints_are_refused(tmp_path: Path, config: dict[str, object], message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(write_config(tmp_path / "ckpt", **config))


def test_missing_directory_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"reward_rm\.checkpoint"):
        read_checkpoint(tmp_path / "nowhere")
