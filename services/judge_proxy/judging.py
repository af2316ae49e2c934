"""Evaluating one rubric on one sample: render, ask (through cache and pool), read, combine.

Every way to fail ends in `JudgeFailure` with a status and a detail a person can act on.
One exception, by policy (`response_failures: lowest`, the default): a failure the response
can cause (no readable verdict, a refusal, a reply cut at max_tokens, a request the upstream
rejects, an overlong response) is a verdict at the rubric's lowest reward, flagged in the
tally, so that no response gains by breaking its judge (the fallback reward may be above what
it deserves).

Every request ends with a line asking for the verdict after a code random per request
(`VERDICT-<code>: ...`); only that line of the reply is read (see parsing.py). The judge
cache keys a request without its code, so identical requests still share one verdict.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from arbiter.contract import Status
from services.judge_proxy.fencing import cut_middle, final_only, overlong, shown
from services.judge_proxy.judge_cache import JudgeCache, Verdict, request_key
from services.judge_proxy.metrics import JudgeMetrics
from services.judge_proxy.parsing import (
    PARSER_VERSION,
    VERDICT_MARK,
    Found,
    ParseError,
    Quotes,
    expected_value,
    looks_like_refusal,
    number_in,
    parse_label,
    parse_score,
)
from services.judge_proxy.rubrics import (
    LabelModelRubric,
    MultiRubric,
    Rubric,
    ScoreModelRubric,
    StringCheckRubric,
)
from services.judge_proxy.settings import JudgeServiceSettings, RetrySettings, SamplingSettings
from services.judge_proxy.templating import TemplateError, render
from services.judge_proxy.upstream import MIN_ATTEMPT_S, ChatRequest, Completion, UpstreamError, UpstreamPool
from services.scoring.formula import Formula, FormulaError


class JudgeFailure(Exception):
    """A sample gets no verdict: `flag` names the judge log that marks why."""

    def __init__(self, status: Status, detail: str, flag: str = "") -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.flag = flag


@dataclass(slots=True)
class Tally:
    """What grading one sample cost: logged per sample."""

    calls: int = 0  # verdicts needed
    fresh: int = 0  # of them, asked upstream (not cache, not coalesced)
    attempts: int = 0  # HTTP attempts, parse re-asks included
    cache_hits: int = 0
    weighted: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    fallback_verdicts: int = 0  # verdicts a fallback judge gave (the primary was unavailable)
    response_cut: int = 0  # characters of the response the judge was not shown (too long)
    # Failures the response can cause, made verdicts at the lowest reward: flag -> detail.
    as_lowest: dict[str, str] = dataclasses.field(default_factory=dict)

    def add(self, completion: Completion) -> None:
        self.attempts += completion.attempts
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.cost_usd += completion.cost_usd


@dataclass(frozen=True, slots=True)
class RubricOutcome:
    reward: float  # on the rubric's output scale
    raw: float  # the judge's own number (score on its range, label value, formula value)
    passed: bool | None
    label: str = ""  # the label a label rubric's judge chose ("" for other rubrics)
    invalid: bool = False  # that label is one of the rubric's invalid_labels (no gradable answer)


def _schema(rubric: ScoreModelRubric | LabelModelRubric) -> dict[str, Any]:
    if isinstance(rubric, ScoreModelRubric):
        verdict: dict[str, Any] = {"score": {"type": "number"}}
    else:
        verdict = {"label": {"type": "string", "enum": list(rubric.labels)}}
    name = next(iter(verdict))
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"explanation": {"type": "string"}, **verdict},
                "required": ["explanation", name],
                "additionalProperties": False,
            },
        },
    }


class CutOffError(ParseError):
    """The judge's reply ended at max_tokens: whatever it holds is not its final verdict."""


class RubricEvaluator:
    def __init__(
        self,
        pool: UpstreamPool,
        cache: JudgeCache,
        sampling: SamplingSettings,
        retry: RetrySettings,
        cache_nondeterministic: bool,
        metrics: JudgeMetrics,
        max_response_chars: int = 24_000,
        limits: JudgeServiceSettings | None = None,
    ) -> None:
        self.max_response_chars = max_response_chars
        self.max_response_bytes = limits.max_response_bytes if limits else 4 * max_response_chars
        self.overlong = limits.overlong if limits else "cut_middle"
        self.response_failures = limits.response_failures if limits else "lowest"
        self.pool = pool
        self.cache = cache
        self.sampling = sampling
        self._params_of: dict[int, tuple[Any, tuple[tuple[str, Any], ...]]] = {}
        self.retry = retry
        self.cache_nondeterministic = cache_nondeterministic
        self.metrics = metrics
        self._formulas: dict[str, Formula] = {}

    async def evaluate(
        self, rubric: Rubric, context: Mapping[str, Any], deadline: float, tally: Tally, name: str
    ) -> RubricOutcome:
        if isinstance(rubric, StringCheckRubric):
            return self._string_check(rubric, context)
        if isinstance(rubric, MultiRubric):
            return await self._multi(rubric, context, deadline, tally, name)
        if rubric.final_answer_only:  # the judge sees what the response finally says, and only that
            context = final_only(context)
        if isinstance(rubric, ScoreModelRubric):
            return await self._score_model(rubric, context, deadline, tally, name)
        return await self._label_model(rubric, context, deadline, tally, name)

    # -- rubric types -------------------------------------------------------------------

    def _string_check(self, rubric: StringCheckRubric, context: Mapping[str, Any]) -> RubricOutcome:
        given, reference = _render(rubric.input, context), _render(rubric.reference, context)
        if rubric.operation == "eq":
            ok = given == reference
        elif rubric.operation == "ne":
            ok = given != reference
        elif rubric.operation == "like":
            ok = reference in given
        else:
            ok = reference.casefold() in given.casefold()
        return RubricOutcome(reward=float(ok), raw=float(ok), passed=ok)

    async def _multi(
        self, rubric: MultiRubric, context: Mapping[str, Any], deadline: float, tally: Tally, name: str
    ) -> RubricOutcome:
        names = list(rubric.graders)
        # Every sub-grader runs to its end (bounded by the deadline) so the ones that succeed are
        # cached even when another fails: a retry of the sample re-asks only the failed calls.
        outcomes = await asyncio.gather(
            *(self.evaluate(rubric.graders[n], context, deadline, tally, f"{name}.{n}") for n in names),
            return_exceptions=True,
        )
        values: dict[str, float] = {}
        for sub, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, JudgeFailure):
                raise JudgeFailure(outcome.status, f"{sub}: {outcome.detail}", outcome.flag)
            if isinstance(outcome, BaseException):
                raise outcome
            values[sub] = outcome.reward
        formula = self._formulas.get(rubric.formula)
        if formula is None:
            formula = self._formulas.setdefault(rubric.formula, Formula(rubric.formula, set(names)))
        try:
            value = formula(values)
        except FormulaError as exc:
            raise JudgeFailure(Status.GRADER_ERROR, str(exc)) from exc
        passed = value >= rubric.pass_threshold if rubric.pass_threshold is not None else None
        return RubricOutcome(reward=value, raw=value, passed=passed)

    async def _score_model(
        self, rubric: ScoreModelRubric, context: Mapping[str, Any], deadline: float, tally: Tally, name: str
    ) -> RubricOutcome:
        low, high = rubric.range
        quotes = _quotes(context, self.max_response_chars, self.max_response_bytes)

        def read(completion: Completion, nonce: str) -> Verdict:
            _complete(completion)
            found = parse_score(completion.text, low, high, rubric.verdict, quotes, nonce)
            return self._weighted(rubric, completion, found, number_in(low, high))

        spec = ("score_model", low, high, rubric.logprobs, rubric.verdict, PARSER_VERSION)
        try:
            verdict = await self._ask(rubric, context, spec, read, deadline, tally, name)
        except JudgeFailure as failure:
            self._as_lowest(failure, tally, name)
            lowest = low if rubric.to_output(low) <= rubric.to_output(high) else high  # by reward
            verdict = Verdict(value=lowest, text="", weighted=False)
        passed = verdict.value >= rubric.pass_threshold if rubric.pass_threshold is not None else None
        return RubricOutcome(reward=rubric.to_output(verdict.value), raw=verdict.value, passed=passed)

    async def _label_model(
        self, rubric: LabelModelRubric, context: Mapping[str, Any], deadline: float, tally: Tally, name: str
    ) -> RubricOutcome:
        by_fold = {label.casefold(): label for label in rubric.labels}

        def value_of(token: str) -> float | None:
            label = by_fold.get(token.casefold())
            return rubric.value_of(label) if label is not None else None

        quotes = _quotes(context, self.max_response_chars, self.max_response_bytes)

        def read(completion: Completion, nonce: str) -> Verdict:
            _complete(completion)
            found = parse_label(completion.text, rubric.labels, rubric.verdict, quotes, nonce)
            label = rubric.labels[int(found.value)]
            chosen = Found(value=rubric.value_of(label), text=label, start=found.start)
            verdict = self._weighted(rubric, completion, chosen, value_of)
            return Verdict(value=verdict.value, text=label, weighted=verdict.weighted)

        spec = (
            "label_model",
            rubric.labels,
            rubric.passing_labels,
            sorted(rubric.label_values.items()),
            rubric.logprobs,
            rubric.verdict,
            PARSER_VERSION,
        )
        try:
            verdict = await self._ask(rubric, context, spec, read, deadline, tally, name)
        except JudgeFailure as failure:
            self._as_lowest(failure, tally, name)
            lowest = min(rubric.labels, key=rubric.value_of)
            verdict = Verdict(value=rubric.value_of(lowest), text=lowest, weighted=False)
        return RubricOutcome(
            reward=verdict.value,
            raw=verdict.value,
            passed=verdict.text in rubric.passing_labels,
            label=verdict.text,
            invalid=verdict.text in rubric.invalid_labels,
        )

    def _as_lowest(self, failure: JudgeFailure, tally: Tally, name: str) -> None:
        """Return when `failure` is one the response can cause and policy makes it the lowest
        verdict (recorded in the tally); re-raise it otherwise."""
        if failure.flag not in RESPONSE_FAILURES or (
            self.response_failures != "lowest" and failure.flag != "overlong"
        ):
            raise failure
        tally.as_lowest.setdefault(failure.flag, f"{name}: {failure.detail}")

    # -- asking the judge ---------------------------------------------------------------

    @staticmethod
    def _weighted(
        rubric: ScoreModelRubric | LabelModelRubric,
        completion: Completion,
        found: Found,
        value_of: Callable[[str], float | None],
    ) -> Verdict:
        if rubric.logprobs and completion.logprobs:
            expected = expected_value(completion.logprobs, completion.text, found, value_of)
            if expected is not None:
                return Verdict(value=expected, text=found.text, weighted=True)
        return Verdict(value=found.value, text=found.text, weighted=False)

    def request(
        self, rubric: ScoreModelRubric | LabelModelRubric, context: Mapping[str, Any], nonce: str = ""
    ) -> ChatRequest:
        request, _, note = self._request(rubric, context)
        return _with_note(request, note, nonce) if note and nonce else request

    def _request(
        self, rubric: ScoreModelRubric | LabelModelRubric, context: Mapping[str, Any]
    ) -> tuple[ChatRequest, int, str]:
        """The chat request without its verdict code, how many characters of the response the
        judge is not shown, and the verdict-code note to end the request with ("" for none)."""
        view = shown(context, self.max_response_chars, self.max_response_bytes)  # fenced, cut to size
        messages = tuple((m.role, _render(m.content, view.context)) for m in rubric.messages)
        note = _note(rubric) if rubric.verdict_nonce and not rubric.structured_output else ""
        return ChatRequest(messages=messages, params=self._params(rubric)), view.cut_chars, note

    def _params(self, rubric: ScoreModelRubric | LabelModelRubric) -> tuple[tuple[str, Any], ...]:
        """The request parameters of a rubric (its sampling over the service's): the same for
        every sample, so made once per rubric."""
        known = self._params_of.get(id(rubric))
        if known is not None and known[0] is rubric:
            return known[1]
        overrides = rubric.sampling.model_dump(exclude_none=True)
        sampling = self.sampling.model_copy(update=overrides)
        params: dict[str, Any] = {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.seed is not None:
            params["seed"] = sampling.seed
        if rubric.logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = sampling.top_logprobs
        if rubric.structured_output:
            params["response_format"] = _schema(rubric)
        made = tuple(sorted(params.items()))
        self._params_of[id(rubric)] = (rubric, made)
        return made

    def deterministic(self, request: ChatRequest) -> bool:
        params = dict(request.params)
        return params.get("temperature") == 0 or params.get("seed") is not None

    async def _ask(
        self,
        rubric: ScoreModelRubric | LabelModelRubric,
        context: Mapping[str, Any],
        spec: tuple[Any, ...],
        read: Callable[[Completion, str], Verdict],
        deadline: float,
        tally: Tally,
        name: str,
    ) -> Verdict:
        response = _response(context)
        if self.overlong == "lowest" and overlong(response, self.max_response_chars, self.max_response_bytes):
            raise JudgeFailure(
                Status.OK,
                f"the response is over max_response_chars {self.max_response_chars} or max_response_bytes "
                f"{self.max_response_bytes} ({len(response)} characters): the rubric's lowest reward "
                "(overlong: lowest), no judge was asked",
                "overlong",
            )
        request, cut, note = self._request(rubric, context)  # without a code: the cache key
        tally.response_cut = max(tally.response_cut, cut)
        primary = self.pool.primary_model
        cacheable = self.cache_nondeterministic or self.deterministic(request)
        key = request_key(primary, request, spec) if cacheable and primary else None

        async def produce() -> tuple[Verdict, bool]:
            tally.fresh += 1
            failure: JudgeFailure | None = None
            for _ in range(self.retry.parse_retries + 1):
                nonce = secrets.token_hex(6) if note else ""  # fresh per attempt, never guessable
                sent = _with_note(request, note, nonce) if note else request
                try:
                    completion = await self.pool.complete(sent, deadline, rubric.logprobs)
                except UpstreamError as exc:
                    tally.attempts += exc.attempts
                    if exc.rejected:  # the request itself (its size): this sample's failure
                        raise JudgeFailure(Status.INVALID_INPUT, exc.detail, "request_rejected") from exc
                    status = Status.TIMEOUT if exc.timed_out else Status.UPSTREAM_ERROR
                    raise JudgeFailure(status, exc.detail, "upstream_error") from exc
                tally.add(completion)
                try:
                    by_primary = completion.model == primary
                    return dataclasses.replace(read(completion, nonce), primary=by_primary), by_primary
                except ParseError as exc:
                    failure = self._unreadable(completion, exc, name)
                    if isinstance(exc, CutOffError) and self.deterministic(request):
                        break  # the same request would be cut the same way again
                if deadline - time.monotonic() < MIN_ATTEMPT_S:
                    break  # no time for a re-ask
            if failure is None:
                raise JudgeFailure(Status.GRADER_ERROR, "no verdict", "parse_failed")
            raise failure

        try:
            verdict, source = await self.cache.call(key, deadline, produce)
        except UpstreamError as exc:  # timed out waiting on an identical call in flight
            raise JudgeFailure(Status.TIMEOUT, exc.detail, "upstream_error") from exc
        tally.calls += 1
        tally.weighted += int(verdict.weighted)
        tally.fallback_verdicts += int(not verdict.primary)
        if source != "upstream":
            tally.cache_hits += 1
        return verdict

    def _unreadable(self, completion: Completion, exc: ParseError, name: str) -> JudgeFailure:
        if isinstance(exc, CutOffError):
            self.metrics.verdict_failures.labels(name, "cut_off").inc()
            return JudgeFailure(Status.GRADER_ERROR, f"{completion.upstream}: {exc}", "cut_off")
        if looks_like_refusal(completion.text, completion.finish_reason, completion.refusal):
            self.metrics.verdict_failures.labels(name, "refusal").inc()
            said = completion.refusal or completion.text
            excerpt = " ".join(said.split())[:160]
            return JudgeFailure(
                Status.GRADER_ERROR,
                f"the judge refused ({completion.upstream}, finish_reason={completion.finish_reason}): "
                f"{excerpt!r}",
                "refused",
            )
        self.metrics.verdict_failures.labels(name, "parse").inc()
        return JudgeFailure(
            Status.GRADER_ERROR, f"unreadable verdict from {completion.upstream}: {exc}", "parse_failed"
        )


def _complete(completion: Completion) -> None:
    """A reply cut at max_tokens is no verdict, whatever it holds (it may be quoting the response)."""
    if completion.finish_reason == "length":
        raise CutOffError(
            f"the reply was cut at max_tokens ({completion.completion_tokens} tokens): raise the rubric's "
            "sampling.max_tokens or ask for a shorter explanation"
        )


# Failures a response can cause: with `response_failures: lowest` each is a verdict at the
# rubric's lowest reward (an overlong response is one whatever that setting says, see `overlong`).
RESPONSE_FAILURES = frozenset({"parse_failed", "refused", "cut_off", "request_rejected", "overlong"})


def _response(context: Mapping[str, Any]) -> str:
    sample = context.get("sample")
    response = sample.get("output_text") if isinstance(sample, Mapping) else None
    return response if isinstance(response, str) else ""


def _quotes(context: Mapping[str, Any], max_chars: int, max_bytes: int) -> Quotes:
    """The texts a verdict must not be read from when the judge quotes them: the response, as
    the judge was shown it (a judge can only quote what it saw)."""
    response = _response(context)
    return Quotes([cut_middle(response, max_chars, max_bytes)[0]] if response else [])


def _note(rubric: ScoreModelRubric | LabelModelRubric) -> str:
    """The request's last words: where the judge writes the verdict that counts. `{code}` is
    replaced by a code random per request (never by str.format: nothing else is substituted)."""
    if isinstance(rubric, ScoreModelRubric):
        low, high = rubric.range
        form, what = "[[N]]", f"N is your score, a number from {low:g} to {high:g}"
    else:
        form, what = "[[LABEL]]", "LABEL is one of " + ", ".join(rubric.labels)
    return (
        "\n\nThe verdict code of this request is {code}. After everything else, end your reply with "
        f"one line that holds only your final verdict after the code, in this form: {VERDICT_MARK}"
        "{code}: " + f"{form} ({what}). Only that line is read as your verdict."
    )


def _with_note(request: ChatRequest, note: str, nonce: str) -> ChatRequest:
    """`request` with `note` (its code set) appended to its last user message."""
    text = note.replace("{code}", nonce)
    messages = list(request.messages)
    last = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=len(messages) - 1)
    role, content = messages[last]
    messages[last] = (role, content + text)
    return dataclasses.replace(request, messages=tuple(messages))


def _render(template: str, context: Mapping[str, Any]) -> str:
    try:
        return render(template, context)
    except TemplateError as exc:
        raise JudgeFailure(Status.INVALID_INPUT, f"{exc}; set it in the label JSON or metadata") from exc
