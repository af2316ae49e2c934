"""`python -m services.judge_proxy`: this service alone (its own image, its own scaling)."""

from services.serving import main

main("judge_proxy")
