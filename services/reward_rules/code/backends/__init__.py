"""Where candidate programs run: the sandbox interface (base.py) and the backend choice (factory.py).

The backends themselves: `bwrap` and `unsafe` are the local pool (pool.py launching sandbox.py's
`Sandbox`, with or without bubblewrap), `sandboxfusion` sends runs to a SandboxFusion server
(sandboxfusion.py).
"""
