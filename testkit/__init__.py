"""Helpers for the tests and the benches, never imported by the services: service processes on
free ports, a Redis starter, OpenRLHF's client emulated, tiny reward-model checkpoints built
locally. Its own package so that bench/ does not import tests/ and the kit carries no test code.
"""
