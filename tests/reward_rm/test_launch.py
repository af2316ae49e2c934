"""The vLLM command line for a checkpoint: overrides and pooler config from its config.json."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from services.reward_rm.checkpoint import CheckpointError, read_checkpoint
from services.reward_rm.launch import LaunchOptions, vllm_command
from testkit.tiny_checkpoints import TinyCheckpoints, TinyPRMs


def flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_openrlhf_checkpoint_becomes_a_sequence_classifier(tiny: TinyCheckpoints) -> None:
    options = LaunchOptions(port=8123, tensor_parallel_size=8, dtype="bfloat16", served_model_name="rm")
    command = vllm_command(read_checkpoint(tiny.openrlhf), options)
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert flag(command, "--runner") == "pooling" and flag(command, "--tensor-parallel-size") == "8"
    assert json.loads(flag(command, "--hf-overrides")) == {
        "architectures": ["LlamaForSequenceClassification"],
        "num_labels": 1,
    }
    assert json.loads(flag(command, "--pooler-config")) == {
        "pooling_type": "LAST",
        "use_activation": False,
        "logit_mean": tiny.mean,
        "logit_sigma": tiny.std,
    }
    raw = vllm_command(read_checkpoint(tiny.openrlhf), options, normalize=False)
    assert "logit_mean" not in flag(raw, "--pooler-config")


def test_hf_classifier_needs_no_overrides(tiny: TinyCheckpoints) -> None:
    command = vllm_command(read_checkpoint(tiny.hf))
    assert "--hf-overrides" not in command
    assert json.loads(flag(command, "--pooler-config")) == {"pooling_type": "LAST", "use_activation": False}


def test_a_head_vllm_cannot_load_is_refused(tiny: TinyCheckpoints) -> None:
    with pytest.raises(CheckpointError, match=r"score\.weight"):
        vllm_command(read_checkpoint(tiny.openrlhf, value_head_prefix="value_head"))


def test_the_printed_command_for_70b_tensor_parallel(tiny: TinyCheckpoints, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.reward_rm.launch",
            str(tiny.openrlhf),
            "--tp",
            "8",
            "--port",
            "8200",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    first, *rest = done.stdout.splitlines()
    argv = shlex.split(first)
    assert flag(argv, "--tensor-parallel-size") == "8" and flag(argv, "--port") == "8200"
    assert "ARBITER_REWARD_RM__VLLM__URL=http://127.0.0.1:8200" in rest[-1]
    missing = subprocess.run(
        [sys.executable, "-m", "services.reward_rm.launch", str(tmp_path)], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "no config.json" in missing.stderr


def test_a_process_reward_model_is_served_as_its_own_class_pooling_every_token(tiny_prm: TinyPRMs) -> None:
    for path in (tiny_prm.qwen, tiny_prm.token_cls):
        command = vllm_command(read_checkpoint(path))
        assert "--hf-overrides" not in command
        pooler = json.loads(command[command.index("--pooler-config") + 1])
        assert pooler == {"pooling_type": "ALL", "use_activation": False}
