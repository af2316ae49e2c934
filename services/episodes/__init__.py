"""Multi-turn episodes beside /v1/score: stateful sessions, environments, sandboxed interpreters.

manager.py holds the episodes of a process (ids, retries, expiry); environments/ answer their
actions (python_tool, code_feedback); interpreter.py keeps one persistent sandboxed interpreter
per episode (repl.py runs inside it); transports.py serves them over HTTP and gRPC; extension.py
attaches them to a served grader. See docs/multi-turn.md.
"""
