"""What a reward-model checkpoint is, read from its config.json alone (no torch, no weights).

Two kinds are served:
- `openrlhf`: OpenRLHF `train_rm` output: `architectures: ["RewardModel"]`, the base model's
  `model_type`, a bias-free `Linear(hidden, 1)` named by `value_head_prefix` (default `score`),
  and `normalize_reward` / `mean` / `std`. `AutoModel` drops the head silently, so the
  backends load it by name.
- `hf_classification`: a plain HF `*ForSequenceClassification` with one label (Skywork-Reward).
- `prm`: a process reward model, read at each step's separator: Qwen2.5-Math-PRM's
  `Qwen2ForProcessRewardModel` (its MLP head `score.0`/`score.2` loaded by name, no remote code)
  or an HF `*ForTokenClassification` with one or two labels.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

OPENRLHF_ARCHITECTURES = frozenset({"RewardModel"})
QWEN_PRM_ARCHITECTURES = frozenset({"Qwen2ForProcessRewardModel"})
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


class CheckpointError(ValueError):
    """The checkpoint cannot be served; the message says what to fix."""


@dataclass(frozen=True)
class CheckpointInfo:
    path: Path
    kind: Literal["openrlhf", "hf_classification", "prm"]
    model_type: str
    architecture: str
    value_head_prefix: str
    normalize_reward: bool
    mean: float
    std: float
    torch_dtype: str
    fingerprint: str  # config.json and weight-file sizes: names the exact weights served
    head: Literal["linear", "qwen2_prm"] = "linear"
    num_labels: int = 1

    @property
    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.path / "config.json").read_text())
        return data


def read_checkpoint(path: str | Path, value_head_prefix: str = "") -> CheckpointInfo:
    root = Path(path).expanduser()
    config_file = root / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"no config.json in {root}: set reward_rm.checkpoint to a model directory")
    raw = config_file.read_bytes()
    try:
        config = json.loads(raw)
    except ValueError as exc:
        raise CheckpointError(f"{config_file} is not JSON: {exc}") from exc
    architectures = config.get("architectures") or []
    architecture = str(architectures[0]) if architectures else ""
    model_type = str(config.get("model_type", ""))
    if not model_type:
        raise CheckpointError(f"{config_file} has no model_type")
    head: Literal["linear", "qwen2_prm"] = "linear"
    labels = 1
    if architecture in QWEN_PRM_ARCHITECTURES or architecture.endswith("ForTokenClassification"):
        kind: Literal["openrlhf", "hf_classification", "prm"] = "prm"
        head = "qwen2_prm" if architecture in QWEN_PRM_ARCHITECTURES else "linear"
        labels = _num_labels(config)
        if labels not in (1, 2):
            raise CheckpointError(
                f"{architecture} with {labels} labels: a process reward model has one (a logit) or two "
                "(bad, good) labels"
            )
        prefix = value_head_prefix or "score"
    elif architecture in OPENRLHF_ARCHITECTURES or "value_head_prefix" in config:
        kind = "openrlhf"
        prefix = value_head_prefix or str(config.get("value_head_prefix") or "score")
    elif architecture.endswith("ForSequenceClassification"):
        kind = "hf_classification"
        labels = _num_labels(config)
        if labels != 1:
            raise CheckpointError(f"{architecture} with {labels} labels is a classifier, not a reward model")
        prefix = value_head_prefix or "score"
    else:
        raise CheckpointError(
            f"architecture {architecture or '(none)'} in {config_file} is not a reward model: expected "
            "OpenRLHF's RewardModel, an HF *ForSequenceClassification with one label, or a process reward "
            "model (Qwen2ForProcessRewardModel, *ForTokenClassification)"
        )
    mean = float(config["mean"]) if config.get("mean") is not None else 0.0
    std = float(config["std"]) if config.get("std") is not None else 1.0
    if not (math.isfinite(mean) and math.isfinite(std)) or std <= 0:
        raise CheckpointError(f"{config_file}: mean={mean} std={std} cannot normalize rewards")
    return CheckpointInfo(
        path=root,
        kind=kind,
        model_type=model_type,
        architecture=architecture,
        value_head_prefix=prefix,
        normalize_reward=bool(config.get("normalize_reward", False)),
        mean=mean,
        std=std,
        torch_dtype=str(config.get("torch_dtype") or config.get("dtype") or "float32"),
        fingerprint=_fingerprint(root, raw),
        head=head,
        num_labels=labels,
    )


def _num_labels(config: dict[str, Any]) -> int:
    if "num_labels" in config:
        return int(config["num_labels"])
    id2label = config.get("id2label")
    return len(id2label) if isinstance(id2label, dict) else 2


def _fingerprint(root: Path, config_bytes: bytes) -> str:
    digest = hashlib.sha256(config_bytes)
    for name in WEIGHT_FILES:
        file = root / name
        if file.is_file():
            digest.update(f"{name}:{file.stat().st_size}".encode())
            if name.endswith(".json"):
                digest.update(file.read_bytes())
    return digest.hexdigest()[:16]
