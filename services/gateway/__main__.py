"""`python -m services.gateway`: the gateway alone (graders in-process unless `services` names replicas)."""

from services.launch import main

main("gateway")
