"""Group-aware rewards: a sample's reward from the other samples of its prompt.

GRPO-style trainers sample a group of responses per prompt. A recipe with a `group` section
(services/gateway/settings.py `GroupSpec`) rewards a sample with terms over its group
(services/gateway/group_terms.py). The gateway's engine is a `GroupingEngine`: every transport
(gRPC Score, /v1/score, /get_reward) calls its `score`, which grades each sample as usual
(cache, dedupe, batching: per-sample results do not depend on the group and stay cacheable),
then settles the groups:

- a call that holds a whole group (veRL, TRL, `arbiter score --prompt-id-key`) gets the group
  terms at once;
- a call with part of a group (OpenRLHF's one sample per `/get_reward` request) waits until the
  group's other samples have come in other calls, and all of them are answered together. A
  sample still waiting at its hold deadline (`group_hold_s`, inside OpenRLHF's 180 s client
  timeout) is answered with its per-sample reward and `group/incomplete = 1`; the group stays
  open for its late members, and its early members still count in it.
- a request whose client went away (its task cancelled) leaves its sample in the group without a
  waiter: the client's retry of the same sample takes that place back (and, once the group is
  complete, gets the full answer), so a sample is neither lost nor counted twice. An identical
  sample arriving while the first still waits is a duplicate response, another member.

Memory is bounded: at most `group_max_waiting` samples sit in open groups (beyond that a sample
is answered at once, incomplete), and open or finished groups are forgotten `group_keep_s` after
their last arrival. Groups meet in one process: with several gateway workers or replicas a
group's samples must be routed to one of them (docs/group-rewards.md).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.contract import Result, Sample, Status
from services.common.metrics import KitMetrics
from services.common.settings import EmergenceSettings, ServerSettings
from services.gateway import group_terms
from services.gateway.grader import COMPONENT_BUDGET, GatewayGrader
from services.gateway.group_terms import GROUP_LOG_KEYS, GROUP_TERMS, INCOMPLETE_KEY, LEN, Member, Vote
from services.gateway.routing import RouteError, datasource_of
from services.gateway.settings import GatewayServiceSettings, RecipeSpec
from services.scoring.cache import Cache
from services.scoring.engine import Observer, ScoringEngine
from services.scoring.formula import Formula, FormulaError
from services.scoring.grader import Grader

log = logging.getLogger(__name__)

GROUP_ID_KEY = "group_id"  # metadata: the caller's group (veRL's uid, a dataset's prompt id)
GROUP_SIZE_KEY = "group_size"  # metadata: the group's size when the caller knows it
# The math grader returns its cleaned final answer (`prediction`) whatever the reference; a vote
# needs the answers of samples that have none, so they are read against this stand-in.
EXTRACT_REFERENCE = "0"
_HOLD_MARGIN_S = 0.1  # an explicit request timeout: answered this much before it
# Pairwise judging costs n(n-1)/2 verdicts (two judge requests each): 16 members are 120 verdicts,
# 32 are 496. A group larger than this and than its recipe's size (a call that stuffs one
# prompt's samples) is not judged.
MAX_PAIRWISE_MEMBERS = 32


class _StageFailed(Exception):
    """A grader the group stage asked (votes, verdicts) failed: the terms would be made up."""

    def __init__(self, detail: str, failed: float = 0.0) -> None:
        super().__init__(detail)
        self.failed = failed


@dataclass(eq=False, slots=True)
class _Member:
    ident: str
    sample: Sample
    result: Result  # its per-sample result, logs attached
    waiters: int = 0  # requests waiting for it now
    delivered: bool = False  # a request was answered with it (a later identical one is a new sample)


@dataclass(eq=False, slots=True)
class _Group:
    key: str
    recipe: str
    spec: RecipeSpec
    size: int
    touched: float
    members: list[_Member] = field(default_factory=list)
    final: asyncio.Future[list[Result]] | None = None  # set when the group is complete


@dataclass(frozen=True, slots=True)
class _Plan:
    key: str
    recipe: str
    spec: RecipeSpec
    size: int


def _digest(*parts: str) -> str:
    """A digest of `parts` that no other split of the same characters gives: each part goes in with
    its length, so no text in a prompt, datasource or response can pose as a boundary."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def _stated_size(text: str) -> int | None:
    """`metadata.group_size` when it is a plain count in 1..4096, else None (the recipe's size):
    a trainer's typo is no error, and `"²"` or five thousand digits never reach `int` unchecked."""
    if not (0 < len(text) <= 4 and text.isascii() and text.isdigit()):
        return None
    size = int(text)
    return size if 0 < size <= 4096 else None


def incomplete(result: Result) -> Result:
    """A member answered without its group: its per-sample reward, flagged."""
    return result.model_copy(update={"logs": {**result.logs, INCOMPLETE_KEY: 1.0, "group/grouped": 1.0}})


class GroupingEngine(ScoringEngine):
    """The gateway's engine: the kit's pipeline per sample, then the group terms (module docstring)."""

    def __init__(
        self,
        grader: Grader,
        server: ServerSettings,
        cache: Cache | None = None,
        emergence: EmergenceSettings | None = None,
        metrics: KitMetrics | None = None,
        observers: Sequence[Observer] = (),
    ) -> None:
        super().__init__(grader, server, cache, emergence, metrics, observers)
        # No group-aware recipe (or another grader, a test's stand-in): the plain pipeline, no
        # routing pass per sample.
        grouping = isinstance(grader, GatewayGrader) and any(
            recipe.group is not None for recipe in grader.settings.recipes.values()
        )
        self.groups = GroupTable(grader) if grouping and isinstance(grader, GatewayGrader) else None

    def _all_log_keys(self) -> tuple[str, ...]:
        return (*super()._all_log_keys(), *GROUP_LOG_KEYS)

    async def score(
        self, samples: Sequence[Sample], timeout_s: float | None = None, emergence: bool = True
    ) -> list[Result]:
        arrived = time.monotonic()
        results = await super().score(samples, timeout_s, emergence)
        if self.groups is None:
            return results
        plans = [self.groups.plan(sample) for sample in samples]
        if not any(plans):
            return results
        hold = self.groups.settings.group_hold_s
        if timeout_s:
            hold = min(hold, max(timeout_s - _HOLD_MARGIN_S, 0.0))
        # A whole group's terms are due within the call's own deadline (a slow or hung judge
        # costs the terms, never the trainer's call).
        due = max((timeout_s or self.groups.settings.deadline_s) - _HOLD_MARGIN_S, 0.0)
        return await self.groups.settle(samples, results, plans, arrived + hold, arrived + due)

    def release(self) -> None:
        if self.groups is not None:
            self.groups.release()

    async def stop(self) -> None:
        if self.groups is not None:
            await self.groups.aclose()
        await super().stop()


class GroupTable:
    """Open and finished groups of one gateway process, and the group stage's computation."""

    def __init__(self, gateway: GatewayGrader) -> None:
        self.gateway = gateway
        self.settings: GatewayServiceSettings = gateway.settings
        self.open: collections.OrderedDict[str, _Group] = collections.OrderedDict()
        self.finished: collections.OrderedDict[str, _Group] = collections.OrderedDict()
        self.waiting = 0  # members of open groups
        self.kept = 0  # members of finished groups
        self._formulas: dict[int, Formula] = {}
        self._tasks: set[asyncio.Task[list[Result]]] = set()
        # Requests waiting on an open group, woken when it completes.
        self._wakers: dict[str, list[asyncio.Future[None]]] = {}
        # The server is stopping: nobody waits for an open group any more (`release`).
        self.released = False

    # -- which group a sample belongs to ----------------------------------------------------

    def plan(self, sample: Sample) -> _Plan | None:
        try:
            recipe, spec = self.gateway.router.route(sample)
        except RouteError:
            return None
        if spec.group is None:
            return None
        group_id = sample.metadata.get(GROUP_ID_KEY)
        # The two kinds of key are tagged apart: a group id never meets a prompt of that text.
        key = (
            _digest(recipe, "group_id", group_id)
            if group_id
            else _digest(recipe, "prompt", datasource_of(sample), sample.prompt)
        )
        size = _stated_size(sample.metadata.get(GROUP_SIZE_KEY, "")) or spec.group.size
        return _Plan(key, recipe, spec, size)

    # -- holding and answering --------------------------------------------------------------

    async def settle(
        self,
        samples: Sequence[Sample],
        results: list[Result],
        plans: Sequence[_Plan | None],
        hold_until: float,
        whole_until: float | None = None,
    ) -> list[Result]:
        """Each sample's answer: its group's when the group completes by `hold_until` (a group
        whole in this call: by `whole_until`), else its own, flagged incomplete."""
        out = list(results)
        by_key: dict[str, list[int]] = {}
        for index, plan in enumerate(plans):
            if plan is not None:
                by_key.setdefault(plan.key, []).append(index)
        now = time.monotonic()
        self._sweep(now)
        joined: list[tuple[int, _Group, _Member]] = []
        whole: list[_Group] = []
        for key, indices in by_key.items():
            plan = plans[indices[0]]
            assert plan is not None
            if key not in self.open and len(indices) >= plan.size:
                # The whole group is in this call: computed now, never held.
                group = _Group(key, plan.recipe, plan.spec, len(indices), now)
                for index in indices:
                    member = _Member(self._ident(samples[index]), samples[index], results[index], waiters=1)
                    group.members.append(member)
                    joined.append((index, group, member))
                self._start(group)
                whole.append(group)
                continue
            for index in indices:
                found = self._join(plan, samples[index], results[index], now)
                if found is None:
                    out[index] = incomplete(results[index])
                else:
                    joined.append((index, *found))
        try:
            await self._wait_for(joined, hold_until)
            # A group whole in this call waits for nobody: its terms are awaited until the call's
            # deadline (past the hold, which is for waiting on other calls' members).
            computing = [g.final for g in whole if g.final is not None and not g.final.done()]
            if computing:
                due = hold_until if whole_until is None else whole_until
                await asyncio.wait(computing, timeout=max(due - time.monotonic(), 0.0))
                for late in computing:
                    late.cancel()  # no-one will read it: its judge calls stop
        except asyncio.CancelledError:
            for _, _, member in joined:
                member.waiters -= 1  # the client left: a retry of the sample takes its place back
            raise
        for index, group, member in joined:
            member.waiters -= 1
            member.delivered = True
            final = group.final
            if final is not None and final.done() and not final.cancelled() and final.exception() is None:
                out[index] = final.result()[group.members.index(member)]
            else:
                out[index] = incomplete(member.result)
        return out

    async def _wait_for(self, joined: list[tuple[int, _Group, _Member]], hold_until: float) -> None:
        """Until every joined group's result is in, or the hold deadline."""
        groups = list({id(g): g for _, g, _ in joined}.values())
        while True:
            # Once released, open groups are not waited for; groups computing their terms still are.
            unfinished = [
                g
                for g in groups
                if (g.final is None and not self.released) or (g.final is not None and not g.final.done())
            ]
            if not unfinished:
                return
            remaining = hold_until - time.monotonic()
            if remaining <= 0:
                return
            computing: set[asyncio.Future[Any]] = {g.final for g in unfinished if g.final is not None}
            # Open groups have no future yet: woken when one completes (`_join` sets it).
            signal: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            for g in unfinished:
                if g.final is None:
                    self._wakers.setdefault(g.key, []).append(signal)
            try:
                await asyncio.wait(
                    {*computing, signal}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                if not signal.done():
                    signal.cancel()

    def _ident(self, sample: Sample) -> str:
        return _digest(sample.prompt, sample.response, sample.label, sample.metadata.get(GROUP_ID_KEY, ""))

    def _join(self, plan: _Plan, sample: Sample, result: Result, now: float) -> tuple[_Group, _Member] | None:
        """The sample's place in its group: taken back by a retry, or a new member."""
        ident = self._ident(sample)
        done = self.finished.get(plan.key)
        if done is not None:
            for member in done.members:
                if member.ident == ident and member.waiters == 0 and not member.delivered:
                    member.waiters += 1  # a retry of a sample whose group completed without it here
                    return done, member
        group = self.open.get(plan.key)
        if group is not None:
            group.touched = now
            self.open.move_to_end(plan.key)
            for member in group.members:
                if member.ident == ident and member.waiters == 0 and not member.delivered:
                    member.waiters += 1  # a retry: the client gave up on the earlier request
                    member.result = result
                    return group, member
        if self.waiting >= self.settings.group_max_waiting:
            log.warning(
                "group hold full (%d samples waiting): a sample answered without its group", self.waiting
            )
            return None
        if group is None:
            group = _Group(plan.key, plan.recipe, plan.spec, plan.size, now)
            self.open[plan.key] = group
        member = _Member(ident, sample, result, waiters=1)
        group.members.append(member)
        self.waiting += 1
        if len(group.members) >= group.size:
            del self.open[plan.key]
            self.waiting -= len(group.members)
            self._start(group)
            self._remember(group)
            for waker in self._wakers.pop(plan.key, []):
                if not waker.done():
                    waker.set_result(None)
        return group, member

    def _remember(self, group: _Group) -> None:
        old = self.finished.pop(group.key, None)
        if old is not None:
            self.kept -= len(old.members)
        self.finished[group.key] = group
        self.kept += len(group.members)
        while self.kept > self.settings.group_max_waiting and self.finished:
            _, dropped = self.finished.popitem(last=False)
            self.kept -= len(dropped.members)

    def _sweep(self, now: float) -> None:
        """Forget groups untouched for `group_keep_s` (open ones whose members never all came)."""
        horizon = now - self.settings.group_keep_s
        for table, counter in ((self.open, "waiting"), (self.finished, "kept")):
            while table:
                key, group = next(iter(table.items()))
                if group.touched > horizon or any(m.waiters for m in group.members):
                    break
                del table[key]
                setattr(self, counter, getattr(self, counter) - len(group.members))
                self._wakers.pop(key, None)

    def _start(self, group: _Group) -> None:
        group.touched = time.monotonic()
        task = asyncio.create_task(self._compute(group), name=f"group-{group.key[:8]}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        group.final = task

    def release(self) -> None:
        """Answer every request waiting for an open group now (incomplete): the server is stopping,
        and a held request cut at its grace period would cost the trainer a retry to a gone server."""
        self.released = True
        for wakers in self._wakers.values():
            for waker in wakers:
                if not waker.done():
                    waker.set_result(None)
        self._wakers.clear()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=2.0)

    # -- the group stage --------------------------------------------------------------------

    async def _compute(self, group: _Group) -> list[Result]:
        try:
            return await self._terms(group, [0, 0])
        except _StageFailed as exc:
            # A failed vote or verdict would be a made-up term (a failed pair read as a tie favours
            # the member that would have lost it): every member gets its per-sample reward,
            # flagged, so the group is the same for all of them and gives no advantage signal.
            log.warning("group stage of recipe %s: %s", group.recipe, exc)
            out = []
            for member in group.members:
                early = incomplete(member.result)
                logs = {**early.logs, "group/failed": exc.failed}
                detail = f"{early.detail}; group terms left out: {exc}"[:2000]
                out.append(early.model_copy(update={"logs": logs, "detail": detail}))
            return out
        except Exception:  # the group stage never costs a reward: members keep their own
            log.exception("group stage failed for recipe %s", group.recipe)
            return [incomplete(m.result) for m in group.members]

    async def _terms(self, group: _Group, calls: list[int]) -> list[Result]:
        """`calls`: [asked, failed] of the grader calls this stage makes (`_ask` counts them)."""
        spec = group.spec.group
        assert spec is not None
        members = group.members
        most = max(MAX_PAIRWISE_MEMBERS, spec.size)  # a configured size is always judged
        if spec.pairwise_grader is not None and len(members) > most:
            raise _StageFailed(f"{len(members)} members, more than {most} to judge in pairs")
        results = [m.result for m in members]
        correct = [r.status is Status.OK and r.score >= group_terms.PASS for r in results]
        if spec.vote_grader is not None:
            predictions = await self._predictions(spec.vote_grader, spec.vote_requires, members, calls)
            vote = group_terms.majority(predictions, spec.vote_threshold)
            agree = await self._agreement(spec.vote_grader, members, predictions, vote, calls)
            correct = list(agree)
        else:
            predictions = [r.prediction if r.status is Status.OK else "" for r in results]
            vote = group_terms.majority(predictions, spec.vote_threshold)
            agree = [bool(vote.answer) and p == vote.answer for p in predictions]
        wins = [0.5] * len(members)
        if spec.pairwise_grader is not None:
            wins = await self._win_rates(spec.pairwise_grader, spec.pairwise_rubric, members, calls)
        if calls[1]:
            raise _StageFailed(f"{calls[1]} of {calls[0]} grader calls failed", calls[1] / calls[0])
        views = [
            Member(len(m.sample.response), ok, p, group_terms.fingerprint(m.sample.response))
            for m, ok, p in zip(members, correct, predictions, strict=True)
        ]
        values = group_terms.terms(views, vote, agree, wins)
        formula = self._formula(group.spec)
        out = []
        for member, own in zip(members, values, strict=True):
            result = member.result
            logs = {**result.logs, **group_terms.logs(own, spec.vote_grader is not None)}
            if result.status is not Status.OK:  # a failed sample keeps its fallback, flagged as it was
                out.append(result.model_copy(update={"logs": logs}))
                continue
            point = {name: result.logs.get(f"component/{name}", 0.0) for name in group.spec.components}
            point.update(own)
            try:
                reward = formula(point)
            except FormulaError as exc:
                out.append(incomplete(result).model_copy(update={"detail": f"{result.detail}; {exc}"[:2000]}))
                continue
            if group.spec.clip is not None:
                reward = min(max(reward, group.spec.clip[0]), group.spec.clip[1])
            score = own["group.agree"] if spec.vote_grader is not None else result.score
            detail = f"{result.detail}; group of {len(members)}: {spec.formula} -> {reward:g}"
            out.append(
                result.model_copy(
                    update={"reward": reward, "score": score, "logs": logs, "detail": detail[:2000]}
                )
            )
        return out

    def _formula(self, spec: RecipeSpec) -> Formula:
        assert spec.group is not None
        formula = self._formulas.get(id(spec))
        if formula is None:
            formula = Formula(spec.group.formula, {*spec.components, LEN, *GROUP_TERMS})
            self._formulas[id(spec)] = formula
        return formula

    async def _ask(self, grader: str, samples: list[Sample], calls: list[int]) -> list[Result | None]:
        """The grader's results for `samples` (None where it failed), through the gateway's
        backends; `calls` counts them: [asked, failed]."""
        if not samples:
            return []
        results = await self._ask_all(grader, samples)
        calls[0] += len(results)
        calls[1] += sum(r is None for r in results)
        return results

    async def _ask_all(self, grader: str, samples: list[Sample]) -> list[Result | None]:
        service = self.gateway.owners.get(grader)
        if service is None or service not in self.gateway.backends:
            log.warning("group stage: no service has grader %r", grader)
            return [None] * len(samples)
        if grader != service:
            samples = [s.model_copy(update={"metadata": {**s.metadata, "grader": grader}}) for s in samples]
        timeout = self.settings.deadline_s * COMPONENT_BUDGET
        try:
            results = await self.gateway.backends[service].score(samples, timeout)
        except Exception as exc:
            log.warning("group stage: %s failed: %s", grader, exc)
            return [None] * len(samples)
        return [r if r.status is Status.OK else None for r in results]

    async def _predictions(
        self, grader: str, requires: str | None, members: Sequence[_Member], calls: list[int]
    ) -> list[str]:
        """Each member's vote: the grader's prediction ("" when it has none, or lacks `requires`)."""
        asked = [
            Sample(prompt=m.sample.prompt, response=m.sample.response, label=EXTRACT_REFERENCE)
            for m in members
        ]
        return [
            r.prediction if r is not None and (requires is None or r.logs.get(requires) == 1.0) else ""
            for r in await self._ask(grader, asked, calls)
        ]

    async def _agreement(
        self,
        grader: str,
        members: Sequence[_Member],
        predictions: Sequence[str],
        vote: Vote,
        calls: list[int],
    ) -> list[bool]:
        """Whether each member's answer is the majority's: graded against it (equivalent forms count)."""
        agree = [bool(vote.answer) and p == vote.answer for p in predictions]
        if not vote.answer:
            return agree
        others = [i for i, p in enumerate(predictions) if p and p != vote.answer]
        asked = [
            Sample(prompt=members[i].sample.prompt, response=members[i].sample.response, label=vote.answer)
            for i in others
        ]
        for index, result in zip(others, await self._ask(grader, asked, calls), strict=True):
            agree[index] = result is not None and result.score >= group_terms.PASS
        return agree

    async def _win_rates(
        self, grader: str, rubric: str, members: Sequence[_Member], calls: list[int]
    ) -> list[float]:
        """Each member's win rate: the pairwise rubric (both orders) on every pair of the group."""
        pairs = [(i, j) for i in range(len(members)) for j in range(i + 1, len(members))]
        asked = [
            Sample(
                prompt=members[i].sample.prompt,
                response=members[i].sample.response,
                metadata={"rubric": rubric, "baseline": members[j].sample.response},
            )
            for i, j in pairs
        ]
        verdicts = {
            pair: (result.reward if result is not None else 0.5)  # a failure: the stage fails (`calls`)
            for pair, result in zip(pairs, await self._ask(grader, asked, calls), strict=True)
        }
        return group_terms.win_rates(len(members), verdicts)
