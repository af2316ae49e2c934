"""What a sample's label gives the graders: a reference answer, or nothing to compare against.

Both the gateway's router and reward_rules' dispatcher ask this, so that a plain label
("42", a veRL `ground_truth`, a TRL `answer` column) is graded for correctness wherever a
trainer points, instead of falling through to the format rules that pay right and wrong alike.
"""

from __future__ import annotations

from typing import Literal

from arbiter.contract import Sample

LabelKind = Literal["reference", "empty"]

# Keys of a JSON label that carry a reference answer (the math grader reads the same ones).
REFERENCE_KEYS = ("answer", "reference", "solution")


def label_kind(sample: Sample) -> LabelKind:
    """`reference` when the label carries a reference answer (plain text, or JSON with an answer)."""
    text = sample.label.strip()
    if not text:
        return "empty"
    label = sample.label_json()
    if label is None or any(label.get(key) not in (None, "") for key in REFERENCE_KEYS):
        return "reference"
    return "empty"  # a JSON object with nothing to compare against
