"""OpenRLHF's agent file: `--train.agent_func_path /path/to/arbiter/trainer/openrlhf_agent.py`.

OpenRLHF loads a file by path and builds its `AgentExecutor`; the adapter is
`arbiter.adapters.openrlhf_agent` from the arbiter-client distribution (`pip install ./client`).
"""

from arbiter.adapters.openrlhf_agent import AgentExecutor, ArbiterAgent

__all__ = ["AgentExecutor", "ArbiterAgent"]
