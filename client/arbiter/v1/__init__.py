"""Generated gRPC code of the Arbiter scoring contract (proto/arbiter/v1/reward.proto).

Nothing here is written by hand: regenerate with `python scripts/gen_proto.py`.
"""
