"""OpenRLHF's reward file: `--reward.remote_url /path/to/arbiter/trainer/openrlhf_reward_func.py`.

OpenRLHF loads a file by path; the adapter is `arbiter.adapters.openrlhf_reward_func` from the
arbiter-client distribution (`pip install ./client` in the trainer's environment).
"""

from arbiter.adapters.openrlhf_reward_func import reward_func

__all__ = ["reward_func"]
