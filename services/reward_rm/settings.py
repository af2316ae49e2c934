"""Settings of the reward_rm service (section `reward_rm` of the Arbiter settings)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.common.settings import BatchSettings, ServerSettings


def _rm_batch(gpu: bool = False) -> BatchSettings:
    # A CPU forward uses every core: one batch at a time, as large as the queue allows;
    # the backend re-splits it by token budget. On a GPU two: one batch is tokenized on the
    # host while the other runs on the device (the forwards themselves still run one at a time).
    return BatchSettings(
        max_batch_size=256, max_wait_ms=5.0, max_queue=20_000, max_concurrent_batches=2 if gpu else 1
    )


def _vllm_batch() -> BatchSettings:
    # vLLM batches continuously on its side: keep many requests in flight.
    return BatchSettings(max_batch_size=64, max_wait_ms=2.0, max_queue=20_000, max_concurrent_batches=16)


class VLLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(default="http://127.0.0.1:8000", description="base URL of the vLLM pooling server")
    model: str = Field(default="", description="served model name; empty lets the server pick its only one")
    endpoint: Literal["classify", "pooling"] = "classify"
    max_connections: int = Field(default=64, ge=1, description="size of the one connection pool")
    request_size: int = Field(
        default=8, ge=1, description="samples per HTTP request; requests run concurrently"
    )
    timeout_s: float = Field(default=120.0, gt=0)
    server_normalizes: bool | None = Field(
        default=None,
        description="the server applies mean/std (pooler-config logit_mean/logit_sigma); "
        "None: it does when the checkpoint's normalize_reward is on, as `launch` configures it",
    )


class PRMSettings(BaseModel):
    """Process reward models: how a response becomes steps, and steps' scores one reward."""

    model_config = ConfigDict(extra="forbid")

    step_separator: str = Field(
        default="<extra_0>",
        description="text the model was trained to read a step's score at (Qwen2.5-Math-PRM: <extra_0>); "
        "put after every step by the service, never taken from the response",
    )
    split: Literal["blank_lines", "lines", "separator"] = Field(
        default="blank_lines",
        description="how the response is cut into steps: at blank lines (Qwen's recipe), at every line "
        "break, or where the response writes the step separator itself (a policy prompted to)",
    )
    aggregate: Literal["min", "last", "mean", "product"] = Field(
        default="min", description="the reward from the step scores (each P(step is good), in [0, 1])"
    )
    bad_step: float = Field(
        default=0.5, ge=0.0, le=1.0, description="a step scored below this is bad (rm/first_bad_step)"
    )


class RMServiceSettings(ServerSettings):
    http_port: int = Field(default=8102, ge=0, le=65535, description="0 picks a free port")
    grpc_port: int = Field(default=9102, ge=-1, le=65535, description="0 picks a free port, -1 disables gRPC")
    batch: BatchSettings = Field(default_factory=_rm_batch)

    checkpoint: str = Field(
        default="", description="directory of an OpenRLHF RewardModel or HF seq-cls model"
    )
    tokenizer: str = Field(default="", description="tokenizer directory; empty: the checkpoint's")
    backend: Literal["transformers", "vllm"] = "transformers"
    device: str = Field(
        default="cpu", description="torch device of the transformers backend: cpu, cuda, cuda:1"
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="auto: float32 on CPU, the checkpoint's dtype on GPU"
    )
    attn_implementation: str = Field(
        default="", description="e.g. sdpa, eager, flash_attention_2; empty: default"
    )
    torch_threads: int = Field(default=0, ge=0, description="intra-op threads; 0 keeps torch's default")

    max_length: int = Field(default=4096, ge=2, description="tokens per sample, after which it is truncated")
    truncation_side: Literal["middle", "right", "left", "reject"] = Field(
        default="middle",
        description="over max_length only the response is cut, the prompt and the final EOS always stay: "
        "middle keeps its start and end, right its start (as OpenRLHF's dataset), left its end; "
        "reject -> INVALID_INPUT",
    )
    padding_side: Literal["left", "right"] = "right"
    token_budget: int = Field(default=16_384, ge=1, description="padded tokens per forward pass")
    max_forward_batch: int = Field(default=64, ge=1, description="samples per forward pass")
    attention_mask: Literal["auto", "always"] = Field(
        default="auto",
        description="auto: a right-padded causal model runs without an attention mask (pads follow every "
        "real token: nothing real sees them), so attention takes the fused causal kernels; always: masked",
    )
    max_padding: float = Field(
        default=0.1, ge=0.0, le=1.0, description="largest share of padding in a forward; above it, split"
    )

    chat_template: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="apply the RM tokenizer's chat template to (prompt, response), by source: auto templates "
        "every pair but OpenRLHF queries (templated already); always templates those too; never none",
    )
    append_eos: bool | None = Field(
        default=None,
        description="append ' ' + eos when the text does not end with it (OpenRLHF training); "
        "None: on for OpenRLHF checkpoints, off for HF classification models",
    )
    normalize: bool | None = Field(
        default=None, description="(r - mean) / std; None: the checkpoint's normalize_reward"
    )
    value_head_prefix: str = Field(default="", description="override the checkpoint's value_head_prefix")
    activation: Literal["none", "sigmoid"] = Field(default="none", description="applied after normalization")
    failure_reward: Literal["floor", "fixed"] = Field(
        default="floor",
        description="what a sample the RM could not score gets: floor = the lowest reward of the last "
        "`floor_window` scored samples (a failure is never a gain; fallback_reward until one is scored); "
        "fixed = fallback_reward",
    )
    floor_window: int = Field(default=4096, ge=1, description="scored samples the floor is taken over")
    prm: PRMSettings = Field(default_factory=PRMSettings)
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)

    @model_validator(mode="before")
    @classmethod
    def _batching_for_the_backend(cls, data: Any) -> Any:
        """Batch options given in part (YAML, env) complete the backend's defaults, not the kit's."""
        if not isinstance(data, dict):
            return data
        gpu = str(data.get("device") or "cpu").startswith("cuda")
        base = (_vllm_batch() if data.get("backend") == "vllm" else _rm_batch(gpu)).model_dump()
        batch = data.get("batch")
        if batch is None:
            return {**data, "batch": base}
        if isinstance(batch, dict):
            return {**data, "batch": {**base, **batch}}
        return data

    def fingerprint(self) -> dict[str, object]:
        """What changes a reward (the config hash); ports, batching and pools do not."""
        return self.model_dump(
            mode="json",
            include={
                "checkpoint",
                "tokenizer",
                "backend",
                "dtype",
                "max_length",
                "truncation_side",
                "chat_template",
                "append_eos",
                "normalize",
                "value_head_prefix",
                "activation",
                "prm",
            },
        )
