"""The shipped group-aware recipes, by name (`gateway.group_recipes: {kimi_length: 8}`).

Each is a plain `RecipeSpec` with a `group` section: what a person would write in YAML, with
the published design's defaults. docs/group-rewards.md says where each comes from.
"""

from __future__ import annotations

from typing import Any

from services.gateway.settings import RecipeSpec

# Kimi k1.5 (2025, section 2.3.3): lambda = 0.5 - (len - min_len) / (max_len - min_len); a correct
# response gets lambda, a wrong one min(0, lambda); all lengths equal: lambda = 0 (no length signal).
_LAMBDA = "(0.5 - ratio(len - group.min_len, group.max_len - group.min_len, 0.5))"

PRESETS: dict[str, dict[str, Any]] = {
    "kimi_length": {
        "components": {"correct": {"grader": "math", "value": "score"}},
        "formula": "correct",
        "score": "correct",
        "group": {"formula": f"correct + correct*{_LAMBDA} + (1 - correct)*min(0, {_LAMBDA})"},
    },
    # TTRL (Zuo et al. 2025): the group's majority answer is the pseudo-label; a sample earns 1 when
    # its answer is equivalent to it (graded by the math grader), else 0; no majority: no signal.
    "ttrl": {
        "components": {"format": {"grader": "format", "value": "score"}},
        "formula": "0",
        "group": {"formula": "group.agree", "vote_grader": "math", "vote_threshold": 0.0},
    },
    # Duplicates: a correct answer that another member repeats (case, whitespace and punctuation
    # aside) loses half its reward; diversity inside the group is what the advantage needs.
    "dedup": {
        "components": {"math": {"grader": "math"}},
        "formula": "math",
        "score": "math",
        "group": {"formula": "math - 0.5*min(1, group.dup_share*(group.size - 1))"},
    },
    # Pairwise judging: the judge's pairwise rubric (both orders) over every pair of the group; the
    # reward is the win rate against the other members. Alone or early: 0.5, the neutral rate.
    "pairwise": {
        "components": {"format": {"grader": "format", "value": "score"}},
        "formula": "0.5",
        "group": {"formula": "group.win_rate", "pairwise_grader": "judge", "pairwise_rubric": "pairwise"},
    },
    # Correctness as usual, the group's statistics in extra_logs (group/accuracy, all_correct, ...).
    "group_stats": {
        "components": {"math": {"grader": "math"}},
        "formula": "math",
        "score": "math",
        "group": {"formula": "math"},
    },
}


def preset(name: str, size: int) -> RecipeSpec:
    """The shipped recipe `name` for groups of `size` samples."""
    if name not in PRESETS:
        raise ValueError(f"no shipped group recipe {name!r}; there are {sorted(PRESETS)}")
    spec = PRESETS[name]
    return RecipeSpec.model_validate({**spec, "group": {**spec["group"], "size": size}})
