"""Training-side glue (OpenRLHF reward_func, veRL and TRL adapters)."""
