"""The run manifest beside the output: which reward, input and columns produced these rows.

A restart resumes only when the manifest matches, so one output never mixes two rewards or two
inputs. The manifest is written atomically before the first row.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from services.common.contract import GraderInfo

FORMAT_VERSION = 1


def manifest_path(output: Path) -> Path:
    return output.with_name(output.name + ".run.json")


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def build_manifest(
    grader: GraderInfo, input_path: Path, input_format: str, columns: dict[str, Any], source: str
) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "grader": grader.model_dump(mode="json"),
        "source": source,  # "in-process", "ray" or the deployment's URL: informative, not compared
        "input": {"path": str(input_path), "format": input_format, "sha256": file_digest(input_path)},
        "columns": columns,
    }


def mismatch(previous: dict[str, Any], current: dict[str, Any]) -> str | None:
    """Why `previous` rows cannot be continued by `current`, or None when they can."""
    if previous.get("format_version") != current["format_version"]:
        return "it was written by another version of arbiter score"
    old, new = previous.get("grader") or {}, current["grader"]
    for field in ("name", "version", "config_hash"):
        if old.get(field) != new[field]:
            return f"its grader {field} was {old.get(field)!r}, now {new[field]!r}"
    if (previous.get("input") or {}).get("sha256") != current["input"]["sha256"]:
        return "the input file changed"
    if previous.get("columns") != current["columns"]:
        return "the column mapping changed"
    return None


def read_manifest(output: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(manifest_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_manifest(output: Path, manifest: dict[str, Any]) -> None:
    path = manifest_path(output)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    with tmp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
