"""Picks the backend named in the settings; constructing one loads nothing."""

from __future__ import annotations

from services.reward_rm.backends.base import RMBackend
from services.reward_rm.checkpoint import CheckpointInfo
from services.reward_rm.settings import RMServiceSettings


def make_backend(checkpoint: CheckpointInfo, settings: RMServiceSettings) -> RMBackend:
    if settings.backend == "vllm":
        from services.reward_rm.backends.vllm_backend import VLLMBackend

        normalized = settings.vllm.server_normalizes
        return VLLMBackend(settings.vllm, checkpoint.normalize_reward if normalized is None else normalized)
    from services.reward_rm.backends.transformers_backend import TransformersBackend

    return TransformersBackend(checkpoint, settings)
