"""A veRL reward manager that hands Arbiter the prompt veRL itself holds (veRL 0.9, reward loop).

veRL's NaiveRewardManager decodes the response but passes compute_score no prompt, and many
datasets keep none in `extra_info`. This manager decodes the prompt tokens of each sample
(the left-padded `prompts` of the batch, where they are) into `extra_info["prompt"]` unless
the row has one, then runs veRL's own NaiveRewardManager; trainer/verl_reward.py reads it.

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=/path/to/arbiter/trainer/verl_manager.py
    reward.reward_manager.name=ArbiterRewardManager
    reward.custom_reward_function.path=/path/to/arbiter/trainer/verl_reward.py

Imports veRL: load it only inside veRL (the rest of Arbiter never imports this file).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from verl.experimental.reward_loop.reward_manager.naive import (
    NaiveRewardManager,
)


class ArbiterRewardManager(NaiveRewardManager):  # type: ignore[misc]
    async def run_single(self, data: Any) -> dict[str, Any]:
        item = data[-1:]  # the sample NaiveRewardManager scores (the last sequence)
        if "prompts" in item.batch.keys():  # noqa: SIM118  (TensorDict refuses `in`)
            prompt = await self.loop.run_in_executor(None, self._prompt_text, item)
            infos = item.non_tensor_batch.get("extra_info")
            info = dict(infos[0]) if infos is not None and isinstance(infos[0], dict) else {}
            if not info.get("prompt"):
                info["prompt"] = prompt
            uids = item.non_tensor_batch.get("uid")  # the GRPO group: group-aware recipes key on it
            if uids is not None and not info.get("group_id"):
                info["group_id"] = str(uids[0])
            item.non_tensor_batch["extra_info"] = np.array([info], dtype=object)
        return await super().run_single(item)  # type: ignore[no-any-return]

    def _prompt_text(self, item: Any) -> str:
        ids = item.batch["prompts"][0]
        valid = int(item.batch["attention_mask"][0][: ids.shape[-1]].sum())
        return str(self.tokenizer.decode(ids[ids.shape[-1] - valid :], skip_special_tokens=True))
