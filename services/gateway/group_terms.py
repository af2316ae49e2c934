"""The numbers a reward recipe can use about a sample's group (the other samples of its prompt).

Pure functions over member summaries, no I/O: `services/gateway/group.py` gathers a group,
asks the graders what it needs (votes, pairwise verdicts) and calls these. A group-aware
recipe's formula (`GroupSpec.formula`) may use, besides its component names:

- `len`: the sample's response length in characters (tokens are the trainer's; characters
  rank responses of one prompt the same way for the length terms);
- `group.size`, `group.min_len`, `group.max_len`, `group.mean_len`;
- `group.correct_share`: the share of members whose score is a pass (>= 0.5);
- `group.majority_share`: the share of members whose prediction is the group's clear majority
  answer (0 without one), `group.has_majority` (1/0), and `group.agree`: whether this sample's
  answer is the majority's (graded by the vote grader against it);
- `group.dup_share`: the share of the other members whose response is the same as this one's
  once case, whitespace and punctuation are set aside;
- `group.win_rate`: this sample's mean pairwise win rate against the other members (0.5 alone).
"""

from __future__ import annotations

import collections
import hashlib
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

LEN = "len"
GROUP_TERMS = (
    "group.size",
    "group.min_len",
    "group.max_len",
    "group.mean_len",
    "group.correct_share",
    "group.majority_share",
    "group.has_majority",
    "group.agree",
    "group.dup_share",
    "group.win_rate",
)

INCOMPLETE_KEY = "group/incomplete"
# The extra_logs every gateway result carries (0 on a sample of no group recipe), so that
# OpenRLHF, which merges extra_logs by key across samples, always sees the same keys.
GROUP_LOG_KEYS = (
    INCOMPLETE_KEY,
    "group/grouped",  # 1 on a sample of a group-aware recipe
    "group/size",  # members the terms were computed over
    "group/accuracy",  # the group's share of passing members
    "group/all_correct",  # what dynamic filtering drops: no variance in the group
    "group/all_wrong",
    "group/pass_at_k",  # 1 when any member passes (k = the group's size)
    "group/len_spread",  # max - min response length, characters
    "group/majority_share",
    "group/no_majority",  # 1 when a voting recipe found no clear majority: no signal
    "group/agree",
    "group/dup_share",
    "group/win_rate",
    "group/failed",  # share of the group stage's grader calls (votes, verdicts) that failed
)

PASS = 0.5  # a score at or above this is a pass (math: 1 correct, 0 not)


@dataclass(frozen=True, slots=True)
class Member:
    """What the group terms need of one sample."""

    length: int
    correct: bool
    prediction: str = ""
    fingerprint: str = ""


_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


def fingerprint(response: str) -> str:
    """A digest of the response with case, whitespace and punctuation set aside: two responses
    with the same fingerprint are near-exact duplicates."""
    folded = _PUNCT.sub(" ", response.casefold()).strip()
    return hashlib.blake2b(folded.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Vote:
    """The group's majority answer: `answer` is "" when no answer is a clear majority (a tie for
    the most votes, no answers at all, or a share below the threshold)."""

    answer: str
    share: float


def majority(predictions: Sequence[str], threshold: float = 0.0) -> Vote:
    """The most common non-empty prediction, when it is the only one with that many votes and its
    share of the whole group (empty answers count in the group, not as votes) is >= threshold."""
    votes = collections.Counter(p for p in predictions if p)
    if not votes or not predictions:
        return Vote("", 0.0)
    ranked = votes.most_common(2)
    answer, count = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == count:
        return Vote("", 0.0)
    share = count / len(predictions)
    return Vote(answer, share) if share >= threshold else Vote("", 0.0)


def dup_shares(fingerprints: Sequence[str]) -> list[float]:
    """For each member, the share of the other members with its fingerprint (0 alone)."""
    n = len(fingerprints)
    counts = collections.Counter(fingerprints)
    return [(counts[f] - 1) / (n - 1) if n > 1 else 0.0 for f in fingerprints]


def win_rates(n: int, verdicts: dict[tuple[int, int], float]) -> list[float]:
    """Mean win rate of each member against the others, from verdicts `(i, j) -> w` for i < j,
    where `w` is i's win rate against j over both presentation orders (j's is 1 - w)."""
    if n <= 1:
        return [0.5] * n
    totals = [0.0] * n
    for (i, j), w in verdicts.items():
        totals[i] += w
        totals[j] += 1.0 - w
    return [t / (n - 1) for t in totals]


def terms(
    members: Sequence[Member],
    vote: Vote,
    agree: Sequence[bool],
    wins: Sequence[float],
) -> list[dict[str, float]]:
    """Every member's formula values: `len` and the group.* terms (component values aside)."""
    n = len(members)
    lengths = [m.length for m in members]
    shared = {
        "group.size": float(n),
        "group.min_len": float(min(lengths)),
        "group.max_len": float(max(lengths)),
        "group.mean_len": statistics.fmean(lengths),
        "group.correct_share": sum(m.correct for m in members) / n,
        "group.majority_share": vote.share,
        "group.has_majority": 1.0 if vote.answer else 0.0,
    }
    dups = dup_shares([m.fingerprint for m in members])
    return [
        {
            LEN: float(member.length),
            **shared,
            "group.agree": 1.0 if agree[index] else 0.0,
            "group.dup_share": dups[index],
            "group.win_rate": wins[index],
        }
        for index, member in enumerate(members)
    ]


def logs(values: dict[str, float], voting: bool) -> dict[str, float]:
    """A member's group extra_logs from its formula values (`terms`)."""
    accuracy = values["group.correct_share"]
    return {
        INCOMPLETE_KEY: 0.0,
        "group/grouped": 1.0,
        "group/size": values["group.size"],
        "group/accuracy": accuracy,
        "group/all_correct": 1.0 if accuracy == 1.0 else 0.0,
        "group/all_wrong": 1.0 if accuracy == 0.0 else 0.0,
        "group/pass_at_k": 1.0 if accuracy > 0.0 else 0.0,
        "group/len_spread": values["group.max_len"] - values["group.min_len"],
        "group/majority_share": values["group.majority_share"],
        "group/no_majority": 1.0 if voting and not values["group.has_majority"] else 0.0,
        "group/agree": values["group.agree"],
        "group/dup_share": values["group.dup_share"],
        "group/win_rate": values["group.win_rate"],
        "group/failed": 0.0,
    }
