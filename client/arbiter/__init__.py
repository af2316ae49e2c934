"""The Arbiter scoring contract: what a trainer and a service exchange.

v1/ is the generated gRPC code of proto/arbiter/v1/reward.proto (regenerate with
`python scripts/gen_proto.py`); contract.py its JSON mirror as pydantic models, protoconv.py the
one mapping between the two, openrlhf.py OpenRLHF's wire format, client.py the async client and
tls.py the client side of TLS. Imports nothing from services/ or trainer/.
"""
