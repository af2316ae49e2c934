"""veRL's reward manager file: `reward.reward_manager.module.path=/path/to/arbiter/trainer/verl_manager.py`
with `reward.reward_manager.name=ArbiterRewardManager`.

veRL loads a file by path; the manager is `arbiter.adapters.verl_manager` from the
arbiter-client distribution (`pip install ./client`). Imports veRL: load it only inside veRL.
"""

from arbiter.adapters.verl_manager import ArbiterRewardManager

__all__ = ["ArbiterRewardManager"]
