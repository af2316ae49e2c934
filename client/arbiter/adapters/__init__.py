"""The trainer adapters: OpenRLHF's reward_func and agent, veRL's compute_score and reward manager,
TRL's reward function, all over one gRPC connection per process (gateway.py) with a fixed log-key
set (keys.py) and the outage policy in settings.py. Light imports only: they run in the trainer's
processes; a framework that loads a file by path gets the thin entry files in the repo's trainer/.
"""
