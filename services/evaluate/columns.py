"""Which columns hold the prompt, response, label, prompt id, datasource and answer."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from arbiter.contract import Sample
from services.evaluate.readers import InputRow

_METADATA_COLUMNS = ("finish_reason",)


@dataclass(frozen=True)
class ColumnMap:
    prompt: str = "prompt"
    response: str = "response"
    label: str = "label"
    datasource: str = "datasource"
    prompt_id: str | None = None  # groups samples of one prompt for pass@k; None: the prompt text
    answer: str | None = None  # a pre-extracted answer for maj@k votes; None: the grader's result

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def _text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=False)
    return str(value)


def group_of(row: InputRow, prompt_id: str) -> str | None:
    """The row's prompt id as text (the gateway's `metadata.group_id`), or None without one."""
    value = row.value.get(prompt_id) if isinstance(row.value, dict) else None
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def to_sample(row: InputRow, columns: ColumnMap) -> tuple[dict[str, Any], Sample | str]:
    """The record to write back, and the row's Sample or the reason it has none."""
    if row.error:
        return {"_line": row.number, "_raw": row.raw}, row.error
    value = row.value
    if not isinstance(value, dict):
        return {"_line": row.number, "_raw": value}, f"{row.where} is not a JSON object"
    response = value.get(columns.response)
    if not isinstance(response, str):
        return value, f"{row.where}: column {columns.response!r} missing or not a string"
    prompt = value.get(columns.prompt, "")
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        return value, f"{row.where}: column {columns.prompt!r} is not a string"
    label = value.get(columns.label, "")
    label = "" if label is None else label if isinstance(label, str) else _text(label)
    metadata = {k: value[k] for k in _METADATA_COLUMNS if isinstance(value.get(k), str)}
    datasource = value.get(columns.datasource)
    if isinstance(datasource, str):
        metadata["datasource"] = datasource
    group = group_of(row, columns.prompt_id) if columns.prompt_id else None
    if group is not None:
        metadata["group_id"] = group  # a group-aware recipe's group: the prompt's samples
    return value, Sample(prompt=prompt, response=response, label=label, metadata=metadata)
