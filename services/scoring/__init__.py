"""The scoring pipeline: the grader protocol, the engine (cache -> dedupe -> micro-batcher ->
grader), labels and recipe formulas. Never imports a transport."""
