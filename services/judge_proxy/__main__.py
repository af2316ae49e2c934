"""`python -m services.judge_proxy`: this service alone (its own image, its own scaling)."""

from services.cli import main

main(["serve", "judge_proxy"])
