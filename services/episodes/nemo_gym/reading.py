"""What a NeMo-Gym request carries, read leniently from its JSON (pure functions).

NeMo-Gym's resources servers subclass `BaseVerifyRequest` (`responses_create_params`, the prompt
as OpenAI Responses input; `response`, the policy's OpenAI Response) with fields of their own for
the reference. The common ones are read, in this order of precedence:

- `label`: Arbiter's own label, a string or a JSON object (`{"grader": "code", "tests": ...}`)
- `expected_answer`: the reference answer (math, QA, multiple choice datasets)
- `ground_truth`: the same, as some datasets name it
- `verifier_metadata.label` / `verifier_metadata.expected_answer`

`verifier_metadata.grader` (or a top-level `grader`) names the grader or recipe, as
`metadata.grader` does on /v1/score. `environment` (or `verifier_metadata.environment`) names the
episode environment a seeded session opens.

What is graded is the final assistant text: the `output_text` parts of the assistant `message`
items after the response's last tool call or tool output (the whole message output of a
single-turn response). Reasoning items, refusals, tool calls and tool outputs are never graded:
a tool output is the environment's text and, in a request, the caller's to forge.

An item or content part without `type` is read as NeMo-Gym's models read it: its `type` is a
default, and NeMo-Gym's own client (`ServerClient`) sends models dumped with `exclude_unset`, so a
message arrives as `{"id": ..., "content": [{"text": ..., "annotations": []}]}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from arbiter.contract import Sample

LABEL_FIELDS = ("label", "expected_answer", "ground_truth")
METADATA_LABEL_FIELDS = ("label", "expected_answer")
_TOOL_ITEMS = frozenset({"function_call", "function_call_output"})


def _as_label(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)  # a JSON label: {"grader": ...}


def _metadata(body: Mapping[str, Any]) -> Mapping[str, Any]:
    found = body.get("verifier_metadata")
    return found if isinstance(found, Mapping) else {}


def read_label(body: Mapping[str, Any]) -> str | None:
    """The reference the answer is graded against; None when the row carries none."""
    for name in LABEL_FIELDS:
        label = _as_label(body.get(name))
        if label is not None:
            return label
    metadata = _metadata(body)
    for name in METADATA_LABEL_FIELDS:
        label = _as_label(metadata.get(name))
        if label is not None:
            return label
    return None


def read_grader(body: Mapping[str, Any]) -> str:
    found = body.get("grader", _metadata(body).get("grader"))
    return found if isinstance(found, str) else ""


def read_environment(body: Mapping[str, Any], default: str) -> str:
    found = body.get("environment", _metadata(body).get("environment"))
    return found if isinstance(found, str) else default


def _kind(item: Mapping[str, Any]) -> str:
    """An output item's type, inferred from its fields when unset (NeMo-Gym's defaults)."""
    given = item.get("type")
    if isinstance(given, str):
        return given
    if "content" in item:
        return "message"
    if "call_id" in item:
        return "function_call" if "arguments" in item else "function_call_output"
    return "reasoning" if "summary" in item else ""


def _text_of(content: Any, kinds: frozenset[str]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return ""
    parts = []
    for part in content:
        if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
            continue
        if part.get("type") is None or part["type"] in kinds:  # no type: a text part
            parts.append(part["text"])
    return "".join(parts)


def read_prompt(params: Mapping[str, Any]) -> str:
    """The last user message of `responses_create_params.input` (the whole input when a string)."""
    given = params.get("input")
    if isinstance(given, str):
        return given
    if not isinstance(given, Sequence):
        return ""
    for item in reversed(given):
        if isinstance(item, Mapping) and item.get("role") == "user":
            return _text_of(item.get("content"), frozenset({"input_text", "text"}))
    return ""


def _output(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    output = response.get("output")
    if not isinstance(output, Sequence) or isinstance(output, str):
        return []
    return [item for item in output if isinstance(item, Mapping)]


def final_text(response: Mapping[str, Any]) -> str:
    """The assistant's final text (see the module docstring); "" when it wrote none."""
    output = _output(response)
    last_tool = max((i for i, item in enumerate(output) if _kind(item) in _TOOL_ITEMS), default=-1)
    texts = [
        _text_of(item.get("content"), frozenset({"output_text"}))
        for item in output[last_tool + 1 :]
        if _kind(item) == "message" and item.get("role", "assistant") == "assistant"
    ]
    return "".join(texts)


def tool_calls(response: Mapping[str, Any], name: str) -> int:
    """How many calls of the tool `name` the response records."""
    calls = (item for item in _output(response) if _kind(item) == "function_call")
    return sum(1 for item in calls if item.get("name") == name)


def finish_reason(response: Mapping[str, Any]) -> str:
    """ "length" for a response cut short (status `incomplete`), else "stop"."""
    return "length" if response.get("status") == "incomplete" else "stop"


def to_sample(body: Mapping[str, Any]) -> Sample | str:
    """The Sample /verify grades, or why the request carries none (a dataset problem)."""
    label = read_label(body)
    if label is None:
        wanted = ", ".join((*LABEL_FIELDS, *(f"verifier_metadata.{n}" for n in METADATA_LABEL_FIELDS)))
        return f"the request carries no reference answer (one of: {wanted})"
    params = body.get("responses_create_params")
    response = body.get("response")
    metadata = {"finish_reason": finish_reason(response if isinstance(response, Mapping) else {})}
    grader = read_grader(body)
    if grader:
        metadata["grader"] = grader
    return Sample(
        prompt=read_prompt(params if isinstance(params, Mapping) else {}),
        response=final_text(response if isinstance(response, Mapping) else {}),
        label=label,
        metadata=metadata,
    )
