"""bench/gpu/rm_gpu.py's steps, run here on the CPU with a tiny model (`--dry-run`).

The GPU check runs only on a lent machine; this keeps its logic honest everywhere else: the
model is built and saved in OpenRLHF's layout, `arbiter serve reward_rm` loads it (one process,
then replicas side by side; the larger model repeats the same steps and is left out here),
OpenRLHF-shaped bursts get answers, and the service reads exactly the token ids the bare
forward read (same token count, same rewards in fp32). No figure is judged: the time left
never skips a phase here (a budget far above the run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_dry_run_builds_serves_and_compares(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        str(ROOT / "bench" / "gpu" / "rm_gpu.py"),
        *("--dry-run", "--out", str(tmp_path), "--requests", "8", "--threads", "1"),
        *("--replicas", "2", "--larger", "0", "--budget-s", "100000"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1700, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "vs bare" in done.stdout and "MFU" in done.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    phases = [(p["model"], p["phase"]) for p in results["phases"]]
    assert phases == [
        ("2L tiny", "bare forward"),
        ("2L tiny", "bare, masked"),
        ("2L tiny", "service"),
        ("2L tiny", "replicas x2"),
    ]
    assert results["skipped"] == []
    tokens = results["inputs"]["tokens"]
    for phase in results["phases"]:
        assert phase["tokens"] == tokens and phase["tokens_per_s"] > 0 and phase["mfu"] > 0
        if phase["phase"].startswith("bare"):
            assert 0 <= phase["padding_share"] < 1
            continue
        assert phase["errors"] == 0 and phase["not_ok_status"] == 0
        assert phase["max_reward_diff_vs_bare"] < 1e-4  # fp32: the same ids, the same model
        where = phase["where"]
        assert where["service_real_tokens"] == tokens  # the service tokenized exactly what the bare read
        assert where["forwards"] >= 1 and where["batches"] >= 1 and 0 <= where["padding_share"] < 1
        assert where["forward_busy_share"] > 0 and where["tokenize_share"] > 0
        assert phase["p99_s"] >= phase["p50_s"] > 0
    assert (tmp_path / "service-rm-2l-2x1.log").exists()
