"""`python -m services.judge_proxy`: this service alone (its own image, its own scaling)."""

from services.launch import main

main("judge_proxy")
