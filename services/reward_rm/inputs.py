"""From a Sample to the token ids a reward model reads, the way OpenRLHF trained it.

- OpenRLHF's `query` already holds prompt + response with the template tokens: it is used
  as is. A plain (prompt, response) from /v1/score gets the RM tokenizer's chat template.
- OpenRLHF training reads the reward at EOS: it strips trailing newlines and appends
  `" " + eos_token` when the text does not end with it. The kit strips the EOS text off
  OpenRLHF responses (finish_reason "stop" says there was one), so it is put back first.
- Tokenized with `add_special_tokens=False` (the template or query carries BOS), and a
  doubled BOS at the start is cut to one.
- Over `max_length`: keep the end (left, default), keep the start with EOS forced last
  (right, as OpenRLHF's dataset does), or reject. Either way the sample is flagged.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.common.contract import Sample
from services.common.openrlhf import EOS_TEXT_KEY, SOURCE_KEY
from services.reward_rm.settings import RMServiceSettings


@dataclass(frozen=True, slots=True)
class Encoded:
    ids: list[int]
    input_tokens: int  # before truncation
    truncated: bool
    templated: bool
    problem: str = ""  # non-empty: the sample cannot be scored (INVALID_INPUT)


class InputBuilder:
    """Builds and tokenizes reward-model inputs; pure CPU work, safe to run in a thread."""

    def __init__(self, tokenizer: Any, settings: RMServiceSettings, append_eos: bool) -> None:
        self.tokenizer = tokenizer
        self.settings = settings
        self.append_eos = append_eos
        self.eos: str = tokenizer.eos_token or ""
        self.eos_id: int | None = tokenizer.eos_token_id
        self.bos_id: int | None = tokenizer.bos_token_id
        skip = {tokenizer.pad_token, tokenizer.unk_token}
        self.markers = tuple(t for t in tokenizer.all_special_tokens if t and t not in skip)
        self.has_template = bool(getattr(tokenizer, "chat_template", None))
        # Fast tokenizers raise "Already borrowed" when two threads use one at once.
        self._lock = threading.Lock()

    def uses_template(self, sample: Sample) -> bool:
        mode = self.settings.chat_template
        if mode == "never" or not self.has_template or sample.metadata.get(SOURCE_KEY) == "openrlhf":
            return False
        if mode == "always":
            return True
        # OpenRLHF prompts are chat-templated strings; a plain prompt has no special tokens.
        # (A response may well end with EOS text, so it decides only when there is no prompt.)
        text = sample.prompt or sample.response
        return not any(marker in text for marker in self.markers)

    def text(self, sample: Sample) -> tuple[str, bool]:
        """The text to score, and whether the chat template made it."""
        if self.uses_template(sample):
            response = sample.response
            if self.eos and response.rstrip().endswith(self.eos):  # the template ends the turn itself
                response = response.rstrip()[: -len(self.eos)]
            messages = [{"role": "user", "content": sample.prompt}] if sample.prompt else []
            messages.append({"role": "assistant", "content": response})
            text = str(self.tokenizer.apply_chat_template(messages, tokenize=False))
            templated = True
        else:
            text = sample.prompt + sample.response + self._stripped_eos(sample)
            templated = False
        if self.append_eos and self.eos:
            text = text.rstrip("\n")
            if not text.endswith(self.eos):
                text += " " + self.eos
        return text, templated

    def _stripped_eos(self, sample: Sample) -> str:
        """The end-of-sequence text the kit removed from an OpenRLHF response, put back."""
        if EOS_TEXT_KEY in sample.metadata:
            return sample.metadata[EOS_TEXT_KEY]
        if sample.metadata.get("finish_reason") == "stop" and not sample.response.rstrip().endswith(self.eos):
            return self.eos
        return ""

    def encode(self, samples: Sequence[Sample]) -> list[Encoded]:
        with self._lock:
            built = [self.text(sample) for sample in samples]
            ids_list: list[list[int]] = self.tokenizer(
                [text for text, _ in built], add_special_tokens=False, truncation=False
            )["input_ids"]
        return [self._fit(list(ids), templated) for ids, (_, templated) in zip(ids_list, built, strict=True)]

    def _fit(self, ids: list[int], templated: bool) -> Encoded:
        if self.bos_id is not None:
            while len(ids) >= 2 and ids[0] == ids[1] == self.bos_id:
                ids.pop(0)
        n = len(ids)
        if n == 0:
            return Encoded([], 0, False, templated, "empty input: nothing to score")
        limit = self.settings.max_length
        if n <= limit:
            return Encoded(ids, n, False, templated)
        side = self.settings.truncation_side
        if side == "reject":
            return Encoded(
                [], n, True, templated, f"{n} tokens exceed max_length {limit} (truncation: reject)"
            )
        if side == "left":
            return Encoded(ids[-limit:], n, True, templated)
        kept = ids[:limit]
        if self.append_eos and self.eos_id is not None:
            kept[-1] = self.eos_id  # OpenRLHF's dataset does this, so the reward is still read at EOS
        return Encoded(kept, n, True, templated)


def load_tokenizer(path: str) -> Any:
    from services.reward_rm._lazy import require

    transformers = require("transformers")
    return transformers.AutoTokenizer.from_pretrained(path)
