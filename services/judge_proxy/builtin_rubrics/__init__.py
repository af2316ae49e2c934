"""Rubrics that ship with the judge (YAML; loaded by rubrics.builtin_rubrics)."""
