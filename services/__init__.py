"""Arbiter's services: one package each, sharing the kit in services.common."""
