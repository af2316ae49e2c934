"""reward_rm: reward-model scoring (OpenRLHF RewardModel and HF *ForSequenceClassification checkpoints).

Backends: `transformers` (CPU default, GPU capable; needs the `rm` extra) and `vllm` (an
adapter over a vLLM pooling server). Importing this package never imports torch.
"""
