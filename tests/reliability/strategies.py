"""Hypothesis strategies for hostile request bodies, and checks on what a grader answers."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import strategies as st

# JSON as a trainer, a dataset or an attacker might send it (finite numbers: strict JSON).
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)

GRADERS = ("math", "format", "code", "nonexistent", "")


@st.composite
def json_labels(draw: st.DrawFn) -> Any:
    """Labels as OpenRLHF forwards a dataset column: strings, numbers, None, objects, JSON text."""
    obj = draw(
        st.dictionaries(
            st.sampled_from(["grader", "answer", "datasource", "tests", "rubric", "x"]),
            json_values | st.sampled_from(GRADERS),
            max_size=4,
        )
    )
    return draw(st.sampled_from([obj, json.dumps(obj)]) | json_scalars | json_values)


def nested(depth: int, leaf: Any = "1") -> Any:
    """`depth` levels of alternating lists and objects around `leaf`."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"answer": value}
    return value


def openrlhf_bodies(max_samples: int = 4) -> st.SearchStrategy[dict[str, Any]]:
    """Bodies of OpenRLHF's shape (query/prompts/labels lists) with hostile contents."""

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        n = draw(st.integers(min_value=0, max_value=max_samples))
        prompts = draw(st.lists(st.text(max_size=60), min_size=n, max_size=n))
        responses = draw(
            st.lists(
                st.text(max_size=200)
                | st.sampled_from(["\\boxed{1}<|im_end|>", "<think>a</think> <answer>1</answer></s>"]),
                min_size=n,
                max_size=n,
            )
        )
        joined = [p + r if draw(st.booleans()) else r for p, r in zip(prompts, responses, strict=True)]
        body: dict[str, Any] = {"query": joined}
        if draw(st.booleans()):
            body["prompts"] = prompts
        if draw(st.booleans()):
            body["labels"] = draw(st.lists(json_labels(), min_size=n, max_size=n))
        return body

    return build()


def assert_openrlhf_reply(data: Any, samples: int) -> None:
    """OpenRLHF crashes training on anything else: equal-length lists of finite floats."""
    assert isinstance(data, dict), data
    for key in ("rewards", "scores"):
        values = data[key]
        assert isinstance(values, list) and len(values) == samples, data
        assert all(isinstance(v, float | int) and math.isfinite(v) for v in values), data
    logs = data["extra_logs"]
    assert isinstance(logs, dict), data
    for key, values in logs.items():
        assert isinstance(values, list) and len(values) == samples, (key, data)
        assert all(isinstance(v, float | int) and math.isfinite(v) for v in values), (key, data)


def is_openrlhf_shape(body: Any) -> bool:
    """What client/arbiter/openrlhf.py accepts: an object with a `query` list (prompts/labels lists)."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), list):
        return False
    return all(body.get(name) is None or isinstance(body[name], list) for name in ("prompts", "labels"))
