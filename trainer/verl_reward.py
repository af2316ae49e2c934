"""veRL's reward function file: `reward.custom_reward_function.path=/path/to/arbiter/trainer/verl_reward.py`.

veRL loads a file by path and calls its `compute_score`; the adapter is
`arbiter.adapters.verl_reward` from the arbiter-client distribution (`pip install ./client`).
"""

from arbiter.adapters.verl_reward import compute_score

__all__ = ["compute_score"]
