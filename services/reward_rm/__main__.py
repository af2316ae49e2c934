"""`python -m services.reward_rm`: this service alone (its own image, its own scaling)."""

from services.launch import main

main("reward_rm")
