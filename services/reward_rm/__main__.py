"""`python -m services.reward_rm`: this service alone (its own image, its own scaling)."""

from services.cli import main

main(["serve", "reward_rm"])
