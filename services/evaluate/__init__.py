"""Offline scoring of evaluation sets: `arbiter score` and `arbiter compare`.

readers -> columns -> runner (resumable, append-only) -> metrics -> report; compare diffs two runs;
ray_runner scores shards in Ray workers with the same writer and the same guarantees.
"""
