"""Where candidate programs run: the sandbox interface (base.py) and the backend choice (factory.py).

The backends themselves: `bwrap` and `unsafe` are the local pool (bwrap/: pool.py launching
sandbox.py's `Sandbox`, with or without bubblewrap, its cgroups, seccomp filter and reused
sandboxes), `sandboxfusion` sends runs to a SandboxFusion server (sandboxfusion.py).
"""
