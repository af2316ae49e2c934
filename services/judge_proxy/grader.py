"""`JudgeGrader` (grader name "judge"): one rubric per sample, verdicts from LLM judges.

Which rubric, and what it sees:
- label JSON `{"grader": "judge", "rubric": "correctness", "reference": "42"}`: the rubric by
  name; every other field is available as `{{item.<field>}}`;
- a plain-string label: the default rubric, with the label as `{{item.reference}}`;
- metadata (from /v1/score) fills `{{item.*}}` fields the label does not set, and may name
  `rubric` too;
- `{{item.prompt}}` is the sample's prompt, `{{sample.output_text}}` its response (EOS text
  stripped); `{{item.label}}` is the raw label.
Pairwise rubrics compare the response with `{{item.baseline}}` (label field `baseline`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from arbiter.contract import GraderInfo, Result, Sample, Status
from arbiter.openrlhf import DEFAULT_EOS_MARKERS, strip_eos
from services.common.offload import maybe_off_loop
from services.judge_proxy.judge_cache import JudgeCache
from services.judge_proxy.judging import JudgeFailure, RubricEvaluator, RubricOutcome, Tally
from services.judge_proxy.length_bias import LengthCorrelation
from services.judge_proxy.metrics import JudgeMetrics
from services.judge_proxy.parsing import PARSER_VERSION
from services.judge_proxy.rubrics import Rubric
from services.judge_proxy.settings import JudgeServiceSettings
from services.judge_proxy.upstream import UpstreamPool
from services.scoring.grader import SAMPLE_DEADLINES, GraderBase, config_hash
from services.scoring.labels import REFERENCE_KEYS

NAME = "judge"
VERSION = "0.1.0"

LOG_KEYS = (
    "judge/score",  # the judge's own number: score on the rubric's range, label value, formula value
    "judge/passed",
    "judge/calls",  # verdicts this sample needed (2 for pairwise)
    "judge/attempts",  # HTTP attempts made for it
    "judge/retries",  # attempts beyond one per fresh verdict (HTTP retries, fallbacks, re-asks)
    "judge/cache_hits",  # verdicts from the judge cache or an identical call in flight
    "judge/logprob_weighted",  # verdicts that are logprob-weighted expectations
    "judge/prompt_tokens",
    "judge/completion_tokens",
    "judge/cost_usd",
    "judge/latency_s",
    "judge/parse_failed",  # no readable verdict (after re-asks)
    "judge/refused",  # the judge refused
    "judge/upstream_error",  # no upstream answered in time
    "judge/len_corr",  # reward-length correlation over the rolling window (0 until defined)
    "judge/response_cut",  # characters of the response the judge was not shown (over max_response_chars)
    "judge/fallback_model",  # verdicts a fallback judge gave: the result is not cached
    "judge/cut_off",  # the judge's reply ended at max_tokens: no verdict
    "judge/request_rejected",  # the upstream refused the request itself (too long, content filter)
    "judge/overlong",  # the response was over max_response_chars/bytes: the lowest reward, no judge call
    "judge/lowest",  # a failure the response can cause made the rubric's lowest verdict (see detail)
    "judge/invalid",  # the judge chose one of the rubric's invalid_labels (no gradable answer)
)


class JudgeGrader(GraderBase):
    _log_keys = LOG_KEYS

    def __init__(
        self,
        settings: JudgeServiceSettings,
        rubrics: Mapping[str, Rubric],
        pool: UpstreamPool,
        cache: JudgeCache,
        metrics: JudgeMetrics,
    ) -> None:
        if settings.default_rubric not in rubrics:
            raise ValueError(f"default_rubric {settings.default_rubric!r} is not one of {sorted(rubrics)}")
        self.settings = settings
        self.rubrics = dict(rubrics)
        self.pool = pool
        self.cache = cache
        self.metrics = metrics
        self.evaluator = RubricEvaluator(
            pool,
            cache,
            settings.sampling,
            settings.retry,
            settings.cache_nondeterministic,
            metrics,
            settings.max_response_chars,
            settings,
        )
        self._lengths = LengthCorrelation(settings.length_window)
        identity = {
            "rubrics": {
                name: rubric.model_dump(mode="json") for name, rubric in sorted(self.rubrics.items())
            },
            "default_rubric": settings.default_rubric,
            "sampling": settings.sampling.model_dump(mode="json"),
            "models": [u.settings.model for u in pool.upstreams],
            "parser": PARSER_VERSION,
            "max_response_chars": settings.max_response_chars,  # what the judge is shown
            "max_response_bytes": settings.max_response_bytes,
            "overlong": settings.overlong,
            "response_failures": settings.response_failures,
        }
        capabilities = sorted(self.rubrics)
        if not settings.sampling.deterministic:
            capabilities.append("nondeterministic")  # a sampled judge: identical samples may differ
        self._info = GraderInfo(
            name=NAME, version=VERSION, config_hash=config_hash(identity), capabilities=capabilities
        )

    @property
    def metrics_registry(self) -> Any:
        """The judge's own Prometheus registry (see metrics.RegistryForwarder)."""
        return self.metrics.registry

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        # Each sample's work ends when its caller stops waiting (the request's timeout_s or gRPC
        # deadline, as the kit says), or at the judge's own budget: retries, backoff and upstream
        # calls for a sample nobody waits for would hold slots and spend tokens for nothing.
        budget = time.monotonic() + self.settings.budget_s
        callers = SAMPLE_DEADLINES.get()
        if callers is None or len(callers) != len(samples):
            callers = (budget,) * len(samples)
        graded = [
            self._grade(sample, min(budget, until)) for sample, until in zip(samples, callers, strict=True)
        ]
        # One sample (OpenRLHF's every request) is graded in this task: gather would add one.
        results = [await graded[0]] if len(graded) == 1 else list(await asyncio.gather(*graded))
        return self._with_length_bias(samples, results)

    async def aclose(self) -> None:
        await asyncio.gather(self.pool.aclose(), self.cache.aclose())

    # -- one sample ---------------------------------------------------------------------

    def resolve(self, sample: Sample) -> tuple[str, dict[str, Any]]:
        """The rubric name and template context of a sample; JudgeFailure(INVALID_INPUT) if unusable."""
        label = sample.label_json()
        fields: dict[str, Any] = {}
        if label is not None:
            grader = label.get("grader", NAME)
            if grader != NAME:
                raise JudgeFailure(Status.INVALID_INPUT, f"label names grader {grader!r}; this is {NAME!r}")
            fields = {k: v for k, v in label.items() if k != "grader"}
        elif sample.label:
            fields = {"reference": sample.label}
        if "reference" not in fields:  # a math-style label: {"answer": ...} is the reference too
            given = [fields[key] for key in REFERENCE_KEYS if fields.get(key) not in (None, "")]
            if given:
                fields["reference"] = given[0]
        item: dict[str, Any] = {**sample.metadata, **fields, "label": sample.label}
        item.setdefault("prompt", sample.prompt)
        name = item.pop("rubric", None) or self.settings.default_rubric
        if not isinstance(name, str) or name not in self.rubrics:
            raise JudgeFailure(
                Status.INVALID_INPUT,
                f"unknown rubric {name!r}; this judge has {', '.join(sorted(self.rubrics))}",
            )
        response, _ = strip_eos(sample.response, DEFAULT_EOS_MARKERS)
        response = clean_text(response)
        return name, {"item": clean_text(item), "sample": {"output_text": response, "response": response}}

    async def _grade(self, sample: Sample, deadline: float) -> Result:
        started = time.monotonic()
        tally = Tally()
        try:
            size = len(sample.response) + len(sample.prompt) + len(sample.label)
            name, context = await maybe_off_loop(size, self.resolve, sample)  # large: not on the loop
            outcome = await self.evaluator.evaluate(self.rubrics[name], context, deadline, tally, name)
        except Exception as exc:
            failure = (
                exc
                if isinstance(exc, JudgeFailure)
                else JudgeFailure(Status.GRADER_ERROR, f"{type(exc).__name__}: {exc}"[:500])
            )
            logs = self._logs(tally, None, started)
            if failure.flag:
                logs[f"judge/{failure.flag}"] = 1.0
            return Result(
                reward=self.settings.fallback_reward,
                score=0.0,
                status=failure.status,
                detail=failure.detail,
                logs=logs,
            )
        score = float(outcome.passed) if outcome.passed is not None else outcome.reward
        logs = self._logs(tally, outcome, started)
        for flag in tally.as_lowest:
            logs[f"judge/{flag}"] = 1.0
        if tally.as_lowest:
            logs["judge/lowest"] = 1.0
        result = Result(
            reward=outcome.reward,
            score=score,
            status=Status.OK,
            detail=self._detail(name, outcome, tally),
            logs=logs,
        )
        # A fallback judge's verdict stands in for the primary's while it is down, and a lowest
        # verdict for an unreadable reply may be the judge's glitch: no cache keeps either.
        return result.not_cached() if tally.fallback_verdicts or tally.as_lowest else result

    @staticmethod
    def _detail(name: str, outcome: RubricOutcome, tally: Tally) -> str:
        said = f"{outcome.label} (judge {outcome.raw:.4g})" if outcome.label else f"judge {outcome.raw:.4g}"
        parts = [f"{name}: {said} -> reward {outcome.reward:.4g}"]
        if outcome.passed is not None:
            parts.append("pass" if outcome.passed else "fail")
        if tally.weighted:
            parts.append("logprob-weighted")
        if tally.calls and tally.cache_hits == tally.calls:
            parts.append("cached")
        if tally.fallback_verdicts:
            parts.append("fallback judge")
        for flag, why in tally.as_lowest.items():
            parts.append(f"the rubric's lowest verdict ({flag}: {why})"[:600])
        if tally.response_cut:
            parts.append(f"the judge saw the response without {tally.response_cut} characters of its middle")
        return ", ".join(parts)

    @staticmethod
    def _logs(tally: Tally, outcome: RubricOutcome | None, started: float) -> dict[str, float]:
        return {
            "judge/score": outcome.raw if outcome else 0.0,
            "judge/passed": float(bool(outcome and outcome.passed)),
            "judge/calls": float(tally.calls),
            "judge/attempts": float(tally.attempts),
            "judge/retries": float(max(0, tally.attempts - tally.fresh)),
            "judge/cache_hits": float(tally.cache_hits),
            "judge/logprob_weighted": float(tally.weighted),
            "judge/prompt_tokens": float(tally.prompt_tokens),
            "judge/completion_tokens": float(tally.completion_tokens),
            "judge/cost_usd": tally.cost_usd,
            "judge/latency_s": time.monotonic() - started,
            "judge/response_cut": float(tally.response_cut),
            "judge/fallback_model": float(tally.fallback_verdicts),
            "judge/overlong": 0.0,
            "judge/lowest": 0.0,
            "judge/invalid": float(bool(outcome and outcome.invalid)),
        }

    def _with_length_bias(self, samples: Sequence[Sample], results: list[Result]) -> list[Result]:
        graded = [(s, r) for s, r in zip(samples, results, strict=True) if r.status is Status.OK]
        if not graded:
            return results
        lengths = [float(len(s.response.split())) for s, _ in graded]
        batch, window = self._lengths.observe(lengths, [r.reward for _, r in graded])
        if batch is not None:
            self.metrics.length_correlation.labels("batch").set(batch)
        if window is None:
            return results
        self.metrics.length_correlation.labels("window").set(window)
        return [
            r.model_copy(update={"logs": {**r.logs, "judge/len_corr": window}})
            if r.status is Status.OK
            else r
            for r in results
        ]


def clean_text(value: Any) -> Any:
    """`value` with lone surrogates (invalid in UTF-8, so in any request body) replaced by U+FFFD,
    in strings, lists and dict values: one such sample must not fail its batch."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return value
    if isinstance(value, dict):
        return {clean_text(k): clean_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_text(v) for v in value]
    return value
