"""OpenRLHF's remote-reward wire format, both ways: the one OpenRLHF edge.

Both ways into Arbiter from OpenRLHF go through `OpenRLHFBatch`: the HTTP `/get_reward`
(services/transports/http_app.py, scoring with the local engine) and the `reward_func` file
(trainer/openrlhf_reward_func.py, scoring over gRPC). Each parses the body into a batch,
scores `batch.samples` its own way, and answers `batch.respond(...)`.

OpenRLHF crashes training on anything but 200 with finite floats, so nothing here
raises for a per-sample problem: a bad item becomes an INVALID_INPUT result (the
fallback reward plus a `status/invalid_input` flag). Only a body that is not a JSON
object with a `query` list is rejected, by the caller, as a 400.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.contract import OpenRLHFRequest, Result, Sample

# Text forms of end-of-sequence tokens as OpenRLHF decodes them (special tokens kept).
DEFAULT_EOS_MARKERS = (
    "</s>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",
)

PROMPT_MISMATCH_KEY = "input/prompt_mismatch"
# Metadata of samples that came from OpenRLHF: where from, and the end-of-sequence text cut off
# the response (a reward model puts it back: it reads its reward at the EOS token).
SOURCE_KEY = "source"
EOS_TEXT_KEY = "eos_text"


def strip_eos(text: str, markers: Sequence[str]) -> tuple[str, bool]:
    """Remove trailing end-of-sequence markers (and whitespace); say whether any was there.

    Linear in the text: an end offset moves back, the text is copied once (150,000 trailing
    markers used to be 150,000 copies of a 600 KB string)."""
    end = len(text.rstrip())
    found = False
    changed = True
    while changed:
        changed = False
        for marker in markers:
            if marker and text.endswith(marker, 0, end):
                end -= len(marker)
                while end and text[end - 1].isspace():
                    end -= 1
                found = changed = True
    return text[:end], found


class BodyError(ValueError):
    """The body is not an OpenRLHF request at all (the only case answered with a 4xx)."""


@dataclass(frozen=True, slots=True)
class ParsedItem:
    sample: Sample | None  # None: the item is unusable, see `problem`
    problem: str = ""
    prompt_mismatch: bool = False


def parse_body(data: Any) -> OpenRLHFRequest:
    """Validate the outer shape (with messages a person can act on); items are checked later."""
    if not isinstance(data, dict):
        raise BodyError('body must be a JSON object like {"query": [...], "prompts": [...], "labels": [...]}')
    query = data.get("query")
    if not isinstance(query, list):
        raise BodyError('body must have a "query" list (OpenRLHF: prompt + response, one per sample)')
    for name in ("prompts", "labels"):
        if data.get(name) is not None and not isinstance(data[name], list):
            raise BodyError(f'"{name}" must be a list when present')
    return OpenRLHFRequest(query=query, prompts=data.get("prompts"), labels=data.get("labels"))


def _label_text(label: Any) -> str | None:
    """Dataset label columns arrive as strings, numbers or JSON objects; all become strings."""
    if label is None:
        return ""
    if isinstance(label, str):
        return label
    if isinstance(label, bool):
        return None
    if isinstance(label, int | float):
        return str(label)
    if isinstance(label, dict | list):
        return json.dumps(label, ensure_ascii=False)
    return None


@dataclass(frozen=True, slots=True)
class SplitQuery:
    prompt: str  # the part of the query before the response (the prompt as OpenRLHF decoded it)
    response: str  # without the trailing EOS text
    matched: bool  # the query started with the prompt sent beside it
    finish_reason: str  # "stop" when it ended with an EOS text, else "length"
    eos_text: str  # what was cut off the end


def split_query(query: str, prompt: str, eos_markers: Sequence[str]) -> SplitQuery:
    """Split OpenRLHF's `query` (= prompt + response) so that prompt + response + eos_text == query.

    OpenRLHF decodes with special tokens kept, so a trailing EOS text means the model
    stopped on its own; without one the rollout hit the length cap.
    """
    if query.startswith(prompt):
        cut, matched = len(prompt), True
    else:
        # Re-tokenisation can change whitespace at the join; cut at the common prefix.
        cut = 0
        for a, b in zip(query, prompt, strict=False):
            if a != b:
                break
            cut += 1
        matched = False
    response = query[cut:]
    stripped, had_eos = strip_eos(response, eos_markers)
    eos_text = response[len(stripped) :] if had_eos else ""
    if not had_eos:
        stripped = response  # keep trailing whitespace: nothing was cut
    return SplitQuery(query[:cut], stripped, matched, "stop" if had_eos else "length", eos_text)


def to_samples(request: OpenRLHFRequest, eos_markers: Sequence[str]) -> list[ParsedItem]:
    query, prompts, labels = request.query, request.prompts, request.labels
    items: list[ParsedItem] = []
    for index, text in enumerate(query):
        if not isinstance(text, str):
            items.append(ParsedItem(None, f"query[{index}] must be a string, got {type(text).__name__}"))
            continue
        if prompts is None:
            prompt: Any = ""
        elif index < len(prompts):
            prompt = prompts[index]
        else:
            items.append(ParsedItem(None, f"prompts has {len(prompts)} items, query has {len(query)}"))
            continue
        if not isinstance(prompt, str):
            items.append(ParsedItem(None, f"prompts[{index}] must be a string, got {type(prompt).__name__}"))
            continue
        raw_label = labels[index] if labels is not None and index < len(labels) else None
        if labels is not None and index >= len(labels):
            items.append(ParsedItem(None, f"labels has {len(labels)} items, query has {len(query)}"))
            continue
        label = _label_text(raw_label)
        if label is None:
            items.append(ParsedItem(None, f"labels[{index}] has unusable type {type(raw_label).__name__}"))
            continue
        split = split_query(text, prompt, eos_markers)
        metadata = {
            "finish_reason": split.finish_reason,
            SOURCE_KEY: "openrlhf",
            EOS_TEXT_KEY: split.eos_text,
        }
        sample = Sample(prompt=split.prompt, response=split.response, label=label, metadata=metadata)
        items.append(ParsedItem(sample, prompt_mismatch=not split.matched))
    return items


def merge_results(
    items: Sequence[ParsedItem], scored: Sequence[Result], unusable: Callable[[str], Result]
) -> list[Result]:
    """One result per item, in order: `scored` for usable items, `unusable(problem)` for the rest."""
    scored_iter = iter(scored)
    return [next(scored_iter) if item.sample is not None else unusable(item.problem) for item in items]


def to_response(results: Sequence[Result], log_keys: Sequence[str], exact: bool = False) -> dict[str, Any]:
    """`{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}` with the same keys per sample.

    `exact`: exactly `log_keys` (missing ones 0), for a caller that must answer the same keys on
    every call whatever came back; else `log_keys` plus any other key a result carries.
    """
    n = len(results)
    # Every column made at C speed, then each result's own logs written in: a gateway answers a
    # hundred keys or more per sample, most of them zeros (this was a tenth of its CPU).
    extra: dict[str, list[float]] = dict(zip(log_keys, map(list, itertools.repeat((0.0,) * n)), strict=False))
    for index, result in enumerate(results):
        for key, value in result.logs.items():
            column = extra.get(key)
            if column is None:
                if exact:
                    continue
                column = extra[key] = [0.0] * n
            column[index] = value
    return {"rewards": [r.reward for r in results], "scores": [r.score for r in results], "extra_logs": extra}


@dataclass(frozen=True, slots=True)
class OpenRLHFBatch:
    """One OpenRLHF request on its way through Arbiter: parse, score the usable samples, respond."""

    items: tuple[ParsedItem, ...]

    @classmethod
    def parse(cls, data: Any, eos_markers: Sequence[str]) -> OpenRLHFBatch:
        """Raises BodyError only when `data` is not an OpenRLHF body at all."""
        return cls(tuple(to_samples(parse_body(data), eos_markers)))

    @property
    def samples(self) -> list[Sample]:
        """The usable samples, in order: what the caller scores."""
        return [item.sample for item in self.items if item.sample is not None]

    def respond(
        self,
        scored: Sequence[Result],
        unusable: Callable[[str], Result],
        log_keys: Sequence[str],
        exact: bool = False,
    ) -> dict[str, Any]:
        """The OpenRLHF answer: `scored` (one per usable sample), `unusable(problem)` for the rest,
        the prompt-mismatch flag on each; `log_keys` (see to_response) always present."""
        results = merge_results(self.items, scored, unusable)
        answer = to_response(results, [*log_keys, PROMPT_MISMATCH_KEY], exact)
        answer["extra_logs"][PROMPT_MISMATCH_KEY] = [float(item.prompt_mismatch) for item in self.items]
        return answer
