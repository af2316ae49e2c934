"""Format, length and repetition rules: the shaping terms of R1-style recipes.

reward = format term + overlong penalty + repetition penalty
- format term: `format_reward` when every required element is there, else `format_error_reward`;
- overlong penalty (DAPO / OpenRLHF's overlong buffer): 0 up to `max_length - overlong_buffer`,
  then falling linearly to `-overlong_penalty_factor` at `max_length`;
- repetition penalty: 0 up to `repetition_threshold` of repeated n-grams, then linear to
  `-repetition_penalty` when the text is one loop.
score = 1 when the format is right, else 0. A label `{"grader": "format", ...}` (naming this
grader) may override
any setting for its sample (e.g. `{"grader": "format", "max_length": 4096}`); a label naming
another grader (`{"grader": "math", ...}`) leaves the settings alone.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arbiter.contract import GraderInfo, Result, Sample, Status
from arbiter.openrlhf import DEFAULT_EOS_MARKERS, strip_eos
from services.common.offload import maybe_off_loop
from services.scoring.grader import GraderBase, config_hash
from services.textstats.textscan import pair_contents, token_stats, tokens

VERSION = "1.1.0"

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
# A pre-tokenizer's view of the text (textscan.tokens): each word, and each punctuation mark, symbol
# or emoji on its own (as BPE tokenizers split them); each character of a script written without
# spaces (CJK, Thai, ...); a word longer than textscan.WORD_CAP as its pieces. Counting `\w+` words
# alone let a response that loops on "?!" or "." (no words at all), or on "让我再检查一遍" or
# "0123456789" without spaces, escape the overlong and repetition penalties.

LOG_KEYS = (
    "rules/format_ok",
    "rules/think_ok",
    "rules/answer_ok",
    "rules/boxed_ok",
    "rules/length",
    "rules/length_penalty",
    "rules/repetition",
    "rules/repetition_penalty",
)


class FormatRulesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    require_think: bool = Field(default=True, description="a <think>...</think> block, then an answer")
    require_answer_tag: bool = Field(default=False, description="<answer>...</answer> after the thinking")
    require_boxed: bool = Field(default=False, description="\\boxed{...} in the final answer")
    format_reward: float = 1.0
    format_error_reward: float = 0.0
    max_length: int = Field(default=0, ge=0, description="length cap; 0 disables the overlong penalty")
    overlong_buffer: int = Field(default=0, ge=0, description="penalty ramps over the last N units")
    overlong_penalty_factor: float = Field(default=1.0, ge=0)
    length_unit: Literal["tokens", "chars", "words"] = Field(
        default="tokens",
        description="tokens: words (cut at 20 characters), each punctuation mark/symbol/emoji and each "
        "CJK/Thai/... character; 'words' is an alias of "
        "'tokens' kept for older configs",
    )
    repetition_ngram: int = Field(default=4, ge=1)
    repetition_threshold: float = Field(default=0.5, ge=0, lt=1)
    repetition_penalty: float = Field(
        default=0.0, ge=0, description="subtracted for a response that is one loop"
    )


def _think_ok(prompt: str, text: str) -> tuple[bool, str, str]:
    """Whether the thinking block is well formed; the text after it; why not."""
    opens = len(_THINK_OPEN.findall(text))
    closes = _THINK_CLOSE.findall(text)
    # Many R1 chat templates end the prompt with "<think>\n": the response then has only the close tag.
    opened_in_prompt = prompt.rstrip().lower().endswith("<think>")
    if len(closes) != 1:
        return False, text, f"expected one </think>, found {len(closes)}"
    if opens != (0 if opened_in_prompt else 1):
        return (
            False,
            text,
            f"expected {'no' if opened_in_prompt else 'one'} <think> in the response, found {opens}",
        )
    head, tail = _THINK_CLOSE.split(text, maxsplit=1)
    if not opened_in_prompt and not head.lstrip().lower().startswith("<think>"):
        return False, text, "text before <think>"
    if not tail.strip():
        return False, tail, "nothing after </think>"
    return True, tail, ""


def overlong_penalty(length: int, max_length: int, buffer: int, factor: float) -> float:
    if max_length <= 0:
        return 0.0
    if buffer <= 0:
        return -factor if length >= max_length else 0.0
    exceed = length - (max_length - buffer)
    return max(min(-exceed / buffer * factor, 0.0), -factor)


def repetition_penalty(ratio: float, threshold: float, penalty: float) -> float:
    if penalty <= 0 or ratio <= threshold:
        return 0.0
    return -penalty * (ratio - threshold) / (1.0 - threshold)


class FormatGrader(GraderBase):
    """Pure and cheap: small batches are scored in the event loop, large ones in a thread."""

    _log_keys = LOG_KEYS

    def __init__(self, config: FormatRulesSettings | None = None) -> None:
        self.config = config or FormatRulesSettings()
        self._info = GraderInfo(
            name="format", version=VERSION, config_hash=config_hash(self.config), capabilities=["format"]
        )
        self._overrides = functools.lru_cache(maxsize=1024)(self._parse_overrides)

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        # Decided by the batch's size: 4,000 samples of 7 KB stall the loop as one of 28 MB would.
        return await maybe_off_loop(sum(len(s.response) for s in samples), self._grade_all, samples)

    def _grade_all(self, samples: Sequence[Sample]) -> list[Result]:
        return [self.grade(sample) for sample in samples]

    def _parse_overrides(self, label: str) -> FormatRulesSettings | str:
        try:
            data = json.loads(label)
        except (ValueError, RecursionError):
            return self.config
        if not isinstance(data, dict) or data.get("grader") != "format":
            return self.config  # options in a label belong to the grader it names, and only to it
        options = {k: v for k, v in data.items() if k != "grader"}
        if not options:
            return self.config
        try:
            return FormatRulesSettings.model_validate({**self.config.model_dump(), **options})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            return f"bad format options in label: {problems}"

    def grade(self, sample: Sample) -> Result:
        config = self._overrides(sample.label) if sample.label.lstrip().startswith("{") else self.config
        if isinstance(config, str):
            return Result(
                reward=self.config.format_error_reward,
                score=0.0,
                status=Status.INVALID_INPUT,
                detail=config,
                logs=dict.fromkeys(LOG_KEYS, 0.0),
            )
        text, _ = strip_eos(sample.response, DEFAULT_EOS_MARKERS)
        problems: list[str] = []

        think_ok, answer_part = True, text
        if config.require_think:
            think_ok, answer_part, why = _think_ok(sample.prompt, text)
            if not think_ok:
                problems.append(why)
        answers = pair_contents(answer_part, "<answer>", "</answer>")
        answer_ok = len(answers) == 1 and bool(answers[0].strip())
        if config.require_answer_tag and not answer_ok:
            problems.append(f"expected one non-empty <answer>...</answer>, found {len(answers)}")
        boxed_ok = bool(_BOXED_RE.search(answer_part))
        if config.require_boxed and not boxed_ok:
            problems.append("no \\boxed{} in the final answer")
        format_ok = not problems

        counted = token_stats(text.lower(), tokens, config.repetition_ngram)
        length = len(text) if config.length_unit == "chars" else counted.count
        length_pen = overlong_penalty(
            length, config.max_length, config.overlong_buffer, config.overlong_penalty_factor
        )
        ratio = counted.repetition
        repeat_pen = repetition_penalty(ratio, config.repetition_threshold, config.repetition_penalty)

        base = config.format_reward if format_ok else config.format_error_reward
        detail = "format ok" if format_ok else "format error: " + "; ".join(problems)
        if length_pen:
            detail += f"; overlong {length} {config.length_unit} (cap {config.max_length}): {length_pen:+.3f}"
        if repeat_pen:
            detail += (
                f"; repetitive ({ratio:.0%} repeated {config.repetition_ngram}-grams): {repeat_pen:+.3f}"
            )
        return Result(
            reward=base + length_pen + repeat_pen,
            score=1.0 if format_ok else 0.0,
            status=Status.OK,
            detail=detail,
            logs={
                "rules/format_ok": float(format_ok),
                "rules/think_ok": float(think_ok),
                "rules/answer_ok": float(answer_ok),
                "rules/boxed_ok": float(boxed_ok),
                "rules/length": float(length),
                "rules/length_penalty": length_pen,
                "rules/repetition": ratio,
                "rules/repetition_penalty": repeat_pen,
            },
        )
