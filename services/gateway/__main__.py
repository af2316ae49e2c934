"""`python -m services.gateway`: the gateway alone (graders in-process unless `services` names replicas)."""

from services.serving import main

main("gateway")
