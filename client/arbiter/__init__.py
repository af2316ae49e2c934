"""The Arbiter scoring contract, and the trainer adapters that speak it (arbiter-client).

v1/ is the generated gRPC code of proto/arbiter/v1/reward.proto (regenerate with
`python scripts/gen_proto.py`); contract.py its JSON mirror as pydantic models, protoconv.py the
one mapping between the two, openrlhf.py OpenRLHF's wire format, logkeys.py the text statistics'
log-key names, client.py the async client and tls.py the client side of TLS; adapters/ the
OpenRLHF, veRL and TRL adapters. Imports nothing of the repository's services, trainer/ or deploy/.
"""
