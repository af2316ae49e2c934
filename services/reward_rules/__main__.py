"""`python -m services.reward_rules`: this service alone (its own image, its own scaling)."""

from services.launch import main

main("reward_rules")
