"""Reward-model backends: token ids in, one raw head value per sample out."""
