"""The reference the service must match: a direct HF forward, fp32, one unpadded sample at a time.

It shares no code with the service: HF's own `LlamaForSequenceClassification` forward
(an OpenRLHF checkpoint loads into it as vLLM serves one: architectures overridden,
one label), then OpenRLHF's normalization by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from testkit.tiny_checkpoints import CHAT_TEMPLATE  # noqa: F401  (documents the template in use)

EOS = "</s>"
BOS = "<s>"


class Reference:
    def __init__(
        self, checkpoint: Path, mean: float = 0.0, std: float = 1.0, normalize: bool = False
    ) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
        self.model = AutoModelForSequenceClassification.from_pretrained(
            str(checkpoint), num_labels=1, dtype=torch.float32
        ).eval()
        self.mean, self.std, self.normalize = mean, std, normalize

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def reward_of_ids(self, ids: Sequence[int]) -> float:
        with self.torch.inference_mode():
            logits = self.model(input_ids=self.torch.tensor([list(ids)])).logits
        value = float(logits[0, 0])
        return (value - self.mean) / self.std if self.normalize else value

    def reward(self, text: str) -> float:
        return self.reward_of_ids(self.ids(text))

    def chat_text(self, prompt: str, response: str) -> str:
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))


def openrlhf_text(text: str) -> str:
    """What OpenRLHF's reward dataset does before tokenizing: strip newlines, end with EOS."""
    text = text.rstrip("\n")
    return text if text.endswith(EOS) else text + " " + EOS
