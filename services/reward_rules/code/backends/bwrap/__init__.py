"""The local backend: pre-started bubblewrap sandboxes (or, in unsafe mode, bare processes).

sandbox.py launches one harness process with its limits (cgroups.py, seccomp.py); pool.py keeps
them started ahead of time; reuse.py reuses proven-clean candidate sandboxes for stdio tests.
"""
