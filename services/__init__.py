"""Arbiter's services: one package each, on the rooms they share.

scoring/ (the pipeline every served grader runs through), transports/ (HTTP and gRPC faces),
textstats/ (the text statistics in extra_logs) and common/ (settings, logs, metrics); the
contract they all speak is the top-level `arbiter` package.
"""
