"""The contract models, their protobuf mirror, and the generated code's freshness."""

from __future__ import annotations

import filecmp
import importlib.util
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from arbiter.contract import GraderInfo, Result, Sample, ScoreRequest, Status
from arbiter.protoconv import (
    request_to_pb,
    response_from_pb,
    response_to_pb,
    result_from_pb,
    result_to_pb,
    sample_from_pb,
    sample_to_pb,
)


def test_generated_code_matches_the_proto(tmp_path: Path, repo_root: Path) -> None:
    spec = importlib.util.spec_from_file_location("gen_proto", repo_root / "scripts" / "gen_proto.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = gen.generate(tmp_path)
    for path in fresh:
        committed = gen.PACKAGE_ROOT / "arbiter" / "v1" / path.name
        assert committed.exists(), f"{committed} missing: run python scripts/gen_proto.py"
        assert filecmp.cmp(path, committed, shallow=False), (
            f"{committed.name} is stale: run python scripts/gen_proto.py and commit the result"
        )


def test_status_enum_matches_the_proto() -> None:
    from arbiter.v1 import reward_pb2 as pb

    names = pb.Status.keys()
    proto_names = {n.removeprefix("STATUS_") for n in names} - {"UNSPECIFIED"}
    assert proto_names == {s.value for s in Status}


def test_round_trip_through_protobuf() -> None:
    sample = Sample(prompt="p", response="r ✓", label='{"grader": "format"}', metadata={"k": "v"})
    assert sample_from_pb(sample_to_pb(sample)) == sample
    for status in Status:
        result = Result(reward=-1.5, score=0.25, status=status, detail="why", logs={"a/b": 3.0})
        assert result_from_pb(result_to_pb(result)) == result
    info = GraderInfo(name="g", version="1", config_hash="h", capabilities=["x"])
    response = response_from_pb(response_to_pb([Result(reward=1, score=1)], info, "rid"))
    assert response.grader == info and response.request_id == "rid"
    request = request_to_pb(ScoreRequest(samples=[sample], request_id="r", timeout_s=2.5))
    assert request.timeout_s == 2.5 and request.samples[0].label == sample.label


def test_results_are_finite_and_logs_numeric() -> None:
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValidationError):
            Result(reward=bad, score=0.0)
        with pytest.raises(ValidationError):
            Result(reward=0.0, score=0.0, logs={"x": bad})
    for reserved in ("reward", "score", "kl"):
        with pytest.raises(ValidationError, match="reserved"):
            Result(reward=0.0, score=0.0, logs={reserved: 1.0})
    with pytest.raises(ValidationError):
        Result.model_validate({"reward": 0.0, "score": 0.0, "logs": {"x": "1"}})


def test_samples_are_strict() -> None:
    with pytest.raises(ValidationError):
        Sample.model_validate({"response": 1})
    with pytest.raises(ValidationError):
        Sample.model_validate({"response": "r", "extra": 1})
    assert Sample(response="r", label='{"grader": "math", "answer": "2"}').label_json() == {
        "grader": "math",
        "answer": "2",
    }
    assert Sample(response="r", label="42").label_json() is None
    assert Sample(response="r", label="{broken").label_json() is None


def test_a_label_nested_past_the_parsers_depth_is_not_json() -> None:
    from arbiter.contract import Sample

    deep = '{"x":' + "[" * 100_000
    assert Sample(response="4", label=deep).label_json() is None  # not a RecursionError
