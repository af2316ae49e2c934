"""The reference a process reward model's service must match: a direct HF forward, fp32, one
unpadded text at a time, read where the text holds the separator token (Qwen2.5-Math-PRM's own
recipe: steps joined and ended by `<extra_0>`, the whole conversation tokenized in one pass).

It shares no code with the service: Qwen2-PRM's head is applied by hand from the safetensors
file, a token-classification PRM through HF's own `*ForTokenClassification` forward.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testkit.tiny_checkpoints import PRM_SEPARATOR


class PRMReference:
    def __init__(self, checkpoint: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from transformers import AutoModel, AutoModelForTokenClassification, AutoTokenizer

        self.torch = torch
        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(checkpoint))
        self.separator_id = int(self.tokenizer.convert_tokens_to_ids(PRM_SEPARATOR))
        config = json.loads((checkpoint / "config.json").read_text())
        self.qwen = config["architectures"] == ["Qwen2ForProcessRewardModel"]
        if self.qwen:
            self.model = AutoModel.from_pretrained(str(checkpoint), dtype=torch.float32).eval()
            self.head = {k: v.float() for k, v in load_file(str(checkpoint / "model.safetensors")).items()}
        else:
            self.model = AutoModelForTokenClassification.from_pretrained(
                str(checkpoint), dtype=torch.float32
            ).eval()

    def token_logits(self, ids: Sequence[int]) -> list[list[float]]:
        """Every token's raw logits (what vLLM's token_classify answers without activation)."""
        torch = self.torch
        with torch.inference_mode():
            if self.qwen:
                hidden = self.model(input_ids=torch.tensor([list(ids)])).last_hidden_state[0]
                h = self.head
                inner = torch.relu(hidden @ h["score.0.weight"].T + h["score.0.bias"])
                logits = inner @ h["score.2.weight"].T + h["score.2.bias"]
            else:
                logits = self.model(input_ids=torch.tensor([list(ids)])).logits[0]
        return [[float(v) for v in row] for row in logits]

    def step_scores_of_ids(self, ids: Sequence[int]) -> list[float]:
        """P(good) at every separator token of `ids`."""
        rows = self.token_logits(ids)
        return [_softmax1(rows[i]) for i, token in enumerate(ids) if token == self.separator_id]

    def ids(self, text: str, split_special: bool = False) -> list[int]:
        kwargs = {"split_special_tokens": True} if split_special else {}
        return list(self.tokenizer(text, add_special_tokens=False, **kwargs)["input_ids"])

    def chat_text(self, prompt: str, steps: Sequence[str]) -> str:
        content = PRM_SEPARATOR.join(steps) + PRM_SEPARATOR
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": content}]
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

    def step_scores(self, prompt: str, steps: Sequence[str], templated: bool = True) -> list[float]:
        text = (
            self.chat_text(prompt, steps) if templated else prompt + PRM_SEPARATOR.join(steps) + PRM_SEPARATOR
        )
        return self.step_scores_of_ids(self.ids(text))


def _softmax1(row: Sequence[float]) -> float:
    top = max(row)
    weights = [math.exp(v - top) for v in row]
    return weights[1] / sum(weights)


def aggregate(scores: Sequence[float], how: str) -> float:
    """Written apart from services/reward_rm/steps.py on purpose."""
    if how == "min":
        return min(scores)
    if how == "last":
        return scores[-1]
    if how == "mean":
        return sum(scores) / len(scores)
    if how == "product":
        return math.prod(scores)
    raise ValueError(f"unknown aggregate {how!r}")
