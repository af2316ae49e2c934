"""Tiny random-init Llama-style reward models, built locally (nothing comes from a model hub).

One tokenizer (byte-level BPE trained in memory on generated text, with a ChatML-like chat
template) and two checkpoints sharing one set of base weights:
- `openrlhf`: what OpenRLHF's `train_rm` saves: `architectures: ["RewardModel"]`, the base
  model's weights under `model.`, a bias-free `Linear(hidden, 1)` named by
  `value_head_prefix`, and `normalize_reward` / `mean` / `std` in config.json;
- `hf`: a plain `LlamaForSequenceClassification` with one label (Skywork-Reward style).

And process reward models (`build_prm`), with `<extra_0>` as their step separator token:
- `qwen`: Qwen2.5-Math-PRM's layout: `architectures: ["Qwen2ForProcessRewardModel"]`, a Qwen2
  base under `model.` and the MLP head `score.0` (Linear h->h), ReLU, `score.2` (Linear h->2);
- `token_cls`: a plain `LlamaForTokenClassification` with two labels.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
_TEXT = (
    "the a reward model scores every answer step by step so we check whether two plus two is four "
    "and think about primes below thirty wait actually let me reconsider the sum of squares then "
    "verify each claim carefully because training signals matter more than speed here"
)
WORDS = _TEXT.split()


@dataclass(frozen=True)
class TinyCheckpoints:
    openrlhf: Path
    hf: Path
    mean: float
    std: float


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def build_tokenizer(vocab_size: int = 400, extra_special: Sequence[str] = ()) -> Any:
    """A PreTrainedTokenizerFast trained in memory (byte-level BPE), with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(0)
    corpus = [sentence(rng, rng.randint(3, 30)) for _ in range(2000)]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[*SPECIAL_TOKENS, *extra_special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>", *extra_special],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build(
    root: Path,
    *,
    hidden: int = 128,
    layers: int = 2,
    heads: int = 2,
    kv_heads: int = 1,
    vocab_size: int = 400,
    mean: float = 0.25,
    std: float = 1.5,
    normalize_reward: bool = True,
    value_head_prefix: str = "score",
    seed: int = 0,
    head_std: float = 0.25,
) -> TinyCheckpoints:
    """Write both checkpoints under `root`; same base weights and head, so rewards agree.

    head_dim 64: vLLM's CPU attention has kernels for 32, 64, 80, 96, 112, 128... not 16.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForSequenceClassification, LlamaModel

    tokenizer = build_tokenizer(vocab_size)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2 + hidden // 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        initializer_range=0.1,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    base = LlamaModel(config).eval()
    head = torch.nn.Linear(hidden, 1, bias=False)
    torch.nn.init.normal_(head.weight, std=head_std)  # rewards of order 1, like a trained RM's

    openrlhf_dir = root / "openrlhf_rm"
    openrlhf_dir.mkdir(parents=True, exist_ok=True)
    state = {f"model.{k}": v.contiguous() for k, v in base.state_dict().items()}
    state[f"{value_head_prefix}.weight"] = head.weight.detach().contiguous()
    save_file(state, str(openrlhf_dir / "model.safetensors"), metadata={"format": "pt"})
    data = config.to_dict()
    data.update(
        architectures=["RewardModel"],
        value_head_prefix=value_head_prefix,
        normalize_reward=normalize_reward,
        mean=mean,
        std=std,
    )
    (openrlhf_dir / "config.json").write_text(json.dumps(data, indent=2))
    tokenizer.save_pretrained(str(openrlhf_dir))

    hf_dir = root / "hf_seqcls_rm"
    cls_data = {k: v for k, v in config.to_dict().items() if k not in ("id2label", "label2id")}
    cls_config = LlamaConfig.from_dict({**cls_data, "num_labels": 1})
    classifier = LlamaForSequenceClassification(cls_config).eval()
    classifier.model.load_state_dict(base.state_dict())
    with torch.no_grad():
        classifier.score.weight.copy_(head.weight)
    classifier.save_pretrained(str(hf_dir))
    tokenizer.save_pretrained(str(hf_dir))
    return TinyCheckpoints(openrlhf=openrlhf_dir, hf=hf_dir, mean=mean, std=std)


PRM_SEPARATOR = "<extra_0>"


@dataclass(frozen=True)
class TinyPRMs:
    qwen: Path
    token_cls: Path


def build_policy(path: Path, tokenizer: Any, max_positions: int = 512, seed: int = 0) -> Path:
    """A one-layer causal LM over `tokenizer`, saved with it at `path`: a policy that trainer
    frameworks (TRL, veRL) can load and step, with random weights (its text is noise)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_prm(
    root: Path, *, hidden: int = 128, layers: int = 2, heads: int = 2, vocab_size: int = 400, seed: int = 1
) -> TinyPRMs:
    """Write two tiny random-init PRM checkpoints under `root` (head_dim 64, as `build`)."""
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForTokenClassification, Qwen2Config, Qwen2Model

    tokenizer = build_tokenizer(vocab_size, extra_special=[PRM_SEPARATOR])
    special = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    shape = {
        "vocab_size": len(tokenizer),
        "hidden_size": hidden,
        "intermediate_size": hidden * 2 + hidden // 2,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
        "initializer_range": 0.1,
        "tie_word_embeddings": False,
        **special,
    }
    torch.manual_seed(seed)
    qwen_config = Qwen2Config(**shape, use_sliding_window=False)
    base = Qwen2Model(qwen_config).eval()
    first, last = torch.nn.Linear(hidden, hidden), torch.nn.Linear(hidden, 2)
    # Step probabilities spread over (0, 1), not saturated at its ends.
    for layer, std in ((first, 1.0 / hidden**0.5), (last, 0.15)):
        torch.nn.init.normal_(layer.weight, std=std)
        torch.nn.init.normal_(layer.bias, std=0.1)
    qwen_dir = root / "qwen2_prm"
    qwen_dir.mkdir(parents=True, exist_ok=True)
    state = {f"model.{k}": v.contiguous() for k, v in base.state_dict().items()}
    for name, layer in (("score.0", first), ("score.2", last)):
        state[f"{name}.weight"] = layer.weight.detach().contiguous()
        state[f"{name}.bias"] = layer.bias.detach().contiguous()
    save_file(state, str(qwen_dir / "model.safetensors"), metadata={"format": "pt"})
    data = qwen_config.to_dict()
    data.update(architectures=["Qwen2ForProcessRewardModel"], num_labels=2)
    data.pop("id2label", None)
    data.pop("label2id", None)
    (qwen_dir / "config.json").write_text(json.dumps(data, indent=2))
    tokenizer.save_pretrained(str(qwen_dir))

    cls_dir = root / "llama_token_prm"
    classifier = LlamaForTokenClassification(LlamaConfig(**shape, num_labels=2)).eval()
    with torch.no_grad():
        torch.nn.init.normal_(classifier.score.weight, std=0.08)
    classifier.save_pretrained(str(cls_dir))
    tokenizer.save_pretrained(str(cls_dir))
    return TinyPRMs(qwen=qwen_dir, token_cls=cls_dir)
