"""Generated groups and straightforward reference implementations of the group-aware designs.

The references are written from the papers' descriptions, apart from services/gateway's code, so
a test that compares the two checks the gateway's arithmetic, grouping and plumbing at once.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass

from services.gateway.group_recipes import PRESETS, preset

REFERENCE = "42"
ANSWERS = ("42", "41", "7", "13")  # 42 is right; a group's answers are drawn from these
DESIGNS = ("kimi_length", "ttrl", "dedup", "group_stats")
SIZES = (1, 2, 3, 4, 5, 8, 11, 16)


@dataclass(frozen=True)
class Case:
    prompt: str
    responses: list[str]
    answers: list[str]  # "" for a response with no final answer


def recipe_name(design: str, size: int) -> str:
    return f"{design}_{size}"


def recipes(designs: tuple[str, ...] = DESIGNS, sizes: tuple[int, ...] = SIZES) -> dict[str, object]:
    """Gateway `recipes` with every design at every size (`kimi_length_8`, ...)."""
    return {
        recipe_name(d, n): preset(d, n).model_dump(mode="json", exclude_none=True)
        for d in designs
        for n in sizes
        if d in PRESETS
    }


def label(design: str, size: int) -> str:
    return json.dumps({"recipe": recipe_name(design, size), "answer": REFERENCE})


def generate(rng: random.Random, size: int, tag: str, shape: str = "mixed") -> Case:
    """A group: answers drawn to give majorities, ties and empty answers; lengths varied, or all
    equal (`shape="equal"`); duplicates (`shape="dups"`) repeat whole responses."""
    prompt = f"Question {tag}: what is six times seven?"
    answers: list[str] = []
    responses: list[str] = []
    for index in range(size):
        if shape == "dups" and responses and rng.random() < 0.5:
            pick = rng.randrange(len(responses))
            text = responses[pick]
            if rng.random() < 0.5:  # near-exact: spacing and punctuation differ
                text = text.replace(" ", "  ") + "!"
            responses.append(text)
            answers.append(answers[pick])
            continue
        answer = "" if rng.random() < 0.15 else rng.choice(ANSWERS[: rng.randint(1, len(ANSWERS))])
        pad = 10 if shape == "equal" else rng.randint(0, 60)
        body = f"<think>{'x' * pad}</think> "
        text = body + (f"The answer is \\boxed{{{answer}}}" if answer else "I cannot say.")
        if shape == "equal":
            text = text.ljust(60, ".")
        responses.append(f"{text} #{index}" if shape == "dups" else text)
        answers.append(answer)
    return Case(prompt, responses, answers)


# -- references ---------------------------------------------------------------------------


def kimi(case: Case) -> list[float]:
    correct = [a == REFERENCE for a in case.answers]
    lengths = [len(r) for r in case.responses]
    low, high = min(lengths), max(lengths)
    out = []
    for ok, length in zip(correct, lengths, strict=True):
        lam = 0.0 if high == low else 0.5 - (length - low) / (high - low)
        out.append((1.0 if ok else 0.0) + (lam if ok else min(0.0, lam)))
    return out


def majority_answer(answers: list[str]) -> str:
    counts = Counter(a for a in answers if a)
    if not counts:
        return ""
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return ""
    return ranked[0][0]


def ttrl(case: Case) -> list[float]:
    top = majority_answer(case.answers)
    return [1.0 if top and a == top else 0.0 for a in case.answers]


def _folded(text: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())


def dedup(case: Case) -> list[float]:
    folded = [_folded(r) for r in case.responses]
    out = []
    for index, (answer, text) in enumerate(zip(case.answers, folded, strict=True)):
        base = 1.0 if answer == REFERENCE else 0.0
        repeated = any(other == text for j, other in enumerate(folded) if j != index)
        out.append(base - (0.5 if repeated else 0.0))
    return out


def stats(case: Case) -> dict[str, float]:
    correct = [a == REFERENCE for a in case.answers]
    lengths = [len(r) for r in case.responses]
    accuracy = sum(correct) / len(correct)
    return {
        "group/accuracy": accuracy,
        "group/all_correct": float(all(correct)),
        "group/all_wrong": float(not any(correct)),
        "group/pass_at_k": float(any(correct)),
        "group/len_spread": float(max(lengths) - min(lengths)),
        "group/size": float(len(correct)),
    }


def expected(design: str, case: Case) -> list[float]:
    if design == "kimi_length":
        return kimi(case)
    if design == "ttrl":
        return ttrl(case)
    if design == "dedup":
        return dedup(case)
    return [1.0 if a == REFERENCE else 0.0 for a in case.answers]


def per_sample(design: str, case: Case) -> list[float]:
    """The reward a member gets answered without its group (group terms left out)."""
    if design == "ttrl":
        return [0.0] * len(case.answers)
    return [1.0 if a == REFERENCE else 0.0 for a in case.answers]
