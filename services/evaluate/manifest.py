"""The run manifest beside the output: which reward, input and columns produced these rows.

A restart resumes only when the manifest matches, so one output never mixes two rewards or two
inputs. The manifest is written atomically before the first row. It is `OUT.run.json` beside
`OUT.summary.json` and `OUT.report.html` (for `-o OUT.jsonl`), as the README says; runs started
by older versions wrote `OUT.jsonl.run.json`, which is still read so they resume. The manifest
names its output, so two outputs sharing a stem (`x.jsonl`, `x.ndjson`) never take each
other's manifest, and it is what marks an output as arbiter's own (see outfiles).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from arbiter.contract import GraderInfo

FORMAT_VERSION = 1


def manifest_path(output: Path) -> Path:
    return output.with_name(output.stem + ".run.json")


def legacy_manifest_path(output: Path) -> Path:
    """Where versions before the README's name wrote the manifest (still read to resume)."""
    return output.with_name(output.name + ".run.json")


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def build_manifest(
    grader: GraderInfo,
    input_path: Path,
    input_format: str,
    columns: dict[str, Any],
    source: str,
    output_name: str = "",
) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "grader": grader.model_dump(mode="json"),
        "source": source,  # "in-process", "ray" or the deployment's URL: informative, not compared
        "input": {"path": str(input_path), "format": input_format, "sha256": file_digest(input_path)},
        "columns": columns,
        "output": output_name,
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


def load_manifest_file(path: Path) -> dict[str, Any] | None:
    """The manifest at `path`, or None when there is none or it is not one of ours."""
    if path.is_symlink():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "format_version" not in data or "grader" not in data:
        return None
    return data


def read_manifest(output: Path) -> dict[str, Any] | None:
    """The manifest of `output`: `OUT.run.json` when it names this output, else the legacy name."""
    current = load_manifest_file(manifest_path(output))
    if current is not None and current.get("output", output.name) == output.name:
        return current
    return load_manifest_file(legacy_manifest_path(output))


def write_manifest(output: Path, manifest: dict[str, Any]) -> None:
    path = manifest_path(output)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # never write through a link left at the temporary name
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    with tmp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    legacy = legacy_manifest_path(output)
    if legacy != path and load_manifest_file(legacy) is not None:
        legacy.unlink()  # a fresh start: the old name must not describe these rows any more
