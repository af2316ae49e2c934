"""OpenRLHF's own reward-fetching code (openrlhf 0.11.2, installed with --no-deps), loaded lightly.

`openrlhf.utils.agent` needs only aiohttp and openrlhf's logging helper, but the package
`openrlhf.utils` imports torch and transformers in its __init__. We register the two
package modules by path without running their __init__ files, then import the real
agent module. The rollout side that cannot run here (a vLLM engine on a GPU, an HF
tokenizer) is replaced by the smallest objects with the same interface.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest


def load_agent_module() -> types.ModuleType:
    if "openrlhf.utils.agent" in sys.modules:
        return sys.modules["openrlhf.utils.agent"]
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "openrlhf is not installed: pip install --no-deps openrlhf==0.11.2 (scripts/bootstrap.sh does)"
        )
    register_light_packages(next(iter(spec.submodule_search_locations)))
    return importlib.import_module("openrlhf.utils.agent")


def register_light_packages(root: str | os.PathLike[str]) -> None:
    """`openrlhf` and `openrlhf.utils` as bare packages: their __init__ files import torch."""
    for name, path in (("openrlhf", str(root)), ("openrlhf.utils", f"{root}/utils")):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [path]
            module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            module.__spec__.submodule_search_locations = [path]
            sys.modules[name] = module


class CharTokenizer:
    """One token per character: decode(encode(text)) == text, as with a real tokenizer's round trip."""

    class _Ids(list[int]):
        def tolist(self) -> list[int]:
            return list(self)

    def __call__(
        self, text: str, add_special_tokens: bool = False, return_tensors: str | None = None
    ) -> dict[str, Any]:
        return {"input_ids": [self._Ids(ord(c) for c in text)]}

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in ids)


@dataclass
class SamplingParams:
    max_tokens: int | None = 256
    logprobs: int | None = None


@dataclass
class _Completion:
    token_ids: list[int]
    finish_reason: str
    logprobs: Any = None


@dataclass
class _RequestOutput:
    outputs: list[_Completion] = field(default_factory=list)


class ScriptedEngine:
    """Stands in for a vLLM engine: 'generates' the response it was given for each prompt."""

    def __init__(self, responses: dict[str, tuple[str, str]]) -> None:
        self.responses = responses  # prompt -> (response text, finish_reason)

    async def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, multi_modal_data: Any = None
    ) -> Any:
        prompt = "".join(chr(i) for i in prompt_token_ids)
        text, finish = self.responses[prompt]
        return _RequestOutput([_Completion([ord(c) for c in text], finish)])
