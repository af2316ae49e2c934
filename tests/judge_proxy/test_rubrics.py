"""Rubrics end to end over real HTTP: scores, logprobs, labels, pairwise swaps, failures as statuses."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from arbiter.contract import Sample, Status
from services.judge_proxy.grader import JudgeGrader
from tests.judge_proxy.fake_openai import FakeOpenAI, directive

Make = Callable[..., JudgeGrader]


def label(**fields: object) -> str:
    return json.dumps({"grader": "judge", **fields})


async def test_helpfulness_maps_the_score_and_weights_logprobs(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    plain, weighted = await grader.score(
        [
            Sample(prompt="Q", response=f"A1 {directive(score=8)}"),
            Sample(
                prompt="Q",
                response=f"A2 {directive(score=8, logprobs={'8': math.log(0.5), '6': math.log(0.5)})}",
            ),
        ]
    )
    assert plain.status is Status.OK and plain.reward == (8 - 1) / 9 and plain.score == 1.0
    assert plain.logs["judge/score"] == 8.0
    assert weighted.logs["judge/score"] == 7.0 and weighted.logs["judge/logprob_weighted"] == 1.0
    assert weighted.reward == (7 - 1) / 9
    body = fake.requests[0].body
    assert body["temperature"] == 0.0 and body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["model"] == "fake-judge" and "A1" in body["messages"][1]["content"]


async def test_correctness_takes_the_plain_label_as_reference(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake, default_rubric="correctness")
    right, wrong = await grader.score(
        [
            Sample(prompt="2+2?", response=f"4 {directive(label='CORRECT')}", label="4"),
            Sample(prompt="2+2?", response=f"5 {directive(label='INCORRECT')}", label="4"),
        ]
    )
    assert (right.reward, right.score, wrong.reward, wrong.score) == (1.0, 1.0, 0.0, 0.0)
    assert "[The Start of Reference Answer]\n4\n" in fake.requests[0].body["messages"][1]["content"]


async def test_pairwise_swaps_positions(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    better, worse, biased = await grader.score(
        [
            Sample(
                prompt=f"Q {directive(prefer='GOOD', over='BAD')}",
                response="GOOD",
                label=label(rubric="pairwise", baseline="BAD"),
            ),
            Sample(
                prompt=f"Q {directive(prefer='GOOD', over='BAD')}",
                response="BAD",
                label=label(rubric="pairwise", baseline="GOOD"),
            ),
            Sample(
                prompt=f"Q {directive(always='A')}",
                response="GOOD",
                label=label(rubric="pairwise", baseline="BAD"),
            ),
        ]
    )
    assert (better.reward, better.score) == (1.0, 1.0)
    assert (worse.reward, worse.score) == (0.0, 0.0)
    assert (biased.reward, biased.score) == (0.5, 0.0)  # a judge that always says "A" gives nothing away
    assert better.logs["judge/calls"] == 2.0 and fake.count == 6
    # Each answer sits in its own fence: its first line is the one after the fence's.
    firsts = [
        r.body["messages"][1]["content"].split("A's Answer]\n")[1].split("\n")[1] for r in fake.requests
    ]
    assert sorted(firsts) == ["BAD"] * 3 + ["GOOD"] * 3  # every sample asked in both orders


async def test_pairwise_from_metadata_and_missing_baseline(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    from_metadata, missing = await grader.score(
        [
            Sample(
                prompt=f"Q {directive(prefer='GOOD', over='BAD')}",
                response="GOOD",
                metadata={"rubric": "pairwise", "baseline": "BAD"},
            ),
            Sample(prompt="Q", response="GOOD", label=label(rubric="pairwise")),
        ]
    )
    assert from_metadata.reward == 1.0
    assert missing.status is Status.INVALID_INPUT and "item.baseline" in missing.detail


async def test_custom_multi_and_string_check_rubrics(
    fake: FakeOpenAI, make_grader: Make, tmp_path: Path
) -> None:
    rubrics = tmp_path / "rubrics.yaml"
    rubrics.write_text(
        """
- name: exact
  type: string_check
  operation: ilike
- name: blend
  type: multi
  formula: 0.5 * quality + 0.5 * exact
  pass_threshold: 0.75
  graders:
    exact: {type: string_check, operation: ilike}
    quality:
      type: score_model
      range: [0, 4]
      structured_output: true
      messages: [{role: user, content: "Rate {{sample.output_text}} for {{item.prompt}}"}]
"""
    )
    grader = make_grader(fake, rubric_files=[rubrics])
    exact, blend = await grader.score(
        [
            Sample(
                prompt="Q", response="The answer is PARIS.", label=label(rubric="exact", reference="paris")
            ),
            Sample(
                prompt="Q",
                response="Paris " + directive(reply=json.dumps({"explanation": "ok", "score": 3})),
                label=label(rubric="blend", reference="paris"),
            ),
        ]
    )
    assert (exact.reward, exact.score) == (1.0, 1.0)
    assert blend.reward == 0.5 * 0.75 + 0.5 * 1.0 and blend.score == 1.0
    assert fake.count == 1  # string checks never call the judge
    assert fake.requests[0].body["response_format"]["type"] == "json_schema"


async def test_unreadable_and_refused_verdicts_are_flagged_failures(
    fake: FakeOpenAI, make_grader: Make
) -> None:
    grader = make_grader(fake, fallback_reward=-0.25)
    garbled, refused, refusal_field = await grader.score(
        [
            Sample(prompt="Q", response=directive(id="garbled", reply="This answer is rather good.")),
            Sample(prompt="Q", response=directive(id="refused", refuse=True)),
            Sample(prompt="Q", response=directive(id="field", refuse=True, refusal_field=True)),
        ]
    )
    # A response can cause both (an injection, a provocation): the rubric's lowest verdict, flagged,
    # never the fallback (which may be more than it deserves).
    assert garbled.status is Status.OK and garbled.reward == 0.0 and garbled.logs["judge/lowest"] == 1.0
    assert garbled.logs["judge/parse_failed"] == 1.0 and "no line marked VERDICT-" in garbled.detail
    assert refused.status is Status.OK and refused.reward == 0.0 and refused.logs["judge/refused"] == 1.0
    assert refusal_field.logs["judge/refused"] == 1.0 and "refused" in refusal_field.detail
    assert fake.by_key["garbled"] == 2  # one re-ask (parse_retries=1), then the failure
    get = grader.metrics.registry.get_sample_value
    assert get("arbiter_judge_verdict_failures_total", {"rubric": "helpfulness", "kind": "parse"}) == 2
    assert get("arbiter_judge_verdict_failures_total", {"rubric": "helpfulness", "kind": "refusal"}) == 4


async def test_bad_labels_are_invalid_input(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    other, unknown = await grader.score(
        [
            Sample(prompt="Q", response="x", label=json.dumps({"grader": "math"})),
            Sample(prompt="Q", response="x", label=label(rubric="nope")),
        ]
    )
    assert other.status is Status.INVALID_INPUT and "'math'" in other.detail
    assert unknown.status is Status.INVALID_INPUT and "helpfulness" in unknown.detail
    assert fake.count == 0


async def test_no_upstream_answers_upstream_error_naming_the_setting(make_grader: Make) -> None:
    grader = make_grader()
    judged, checked = await grader.score(
        [
            Sample(prompt="Q", response="x"),
            Sample(prompt="Q", response="x", label=label(rubric="exact_builtin")),
        ]
    )
    assert judged.status is Status.UPSTREAM_ERROR and "judge_proxy.upstreams" in judged.detail
    assert checked.status is Status.INVALID_INPUT


async def test_reward_length_correlation_is_logged_and_exported(fake: FakeOpenAI, make_grader: Make) -> None:
    grader = make_grader(fake)
    # a length-biased judge: longer answers get higher scores
    biased = [
        Sample(prompt="Q", response=" ".join(["word"] * (5 * s)) + directive(score=s)) for s in range(1, 9)
    ]
    results = await grader.score(biased)
    assert all(r.logs["judge/len_corr"] > 0.95 for r in results)
    get = grader.metrics.registry.get_sample_value
    assert (get("arbiter_judge_reward_length_correlation", {"window": "batch"}) or 0.0) > 0.95
    fair = [
        Sample(prompt="Q", response=" ".join(["word"] * (5 * s)) + directive(score=9 - s))
        for s in range(1, 9)
    ]
    await grader.score(fair)
    assert (get("arbiter_judge_reward_length_correlation", {"window": "batch"}) or 0.0) < -0.95
