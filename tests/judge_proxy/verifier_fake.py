"""A fake verifier model on the fake chat-completions server: it reads what a verifier reads.

Behaviour key `verify: true`: the reply's verdict comes from the request itself, as a (perfectly
obedient, not very clever) verifier model would give it: the reference between the rubric's
reference markers, the answer between its fence (the tag the judge derived from the answer, so a
response cannot end it early), and the answer's last non-empty line compared with the reference
(case, spaces and `$`, `\\boxed{}` wrappers aside). An empty answer, or one whose last line ends
in the middle of a sentence (no final punctuation, a trailing "..."), is INVALID. With
`letters: true` the reply is the single letter A / B / C and nothing else (`verifier_letters`);
`equivalent: {phrase: reference}` teaches it answers in other words (a final line ending in the
phrase matches that reference).
"""

from __future__ import annotations

import re
from typing import Any

from tests.judge_proxy.fake_openai import FENCED, FakeOpenAI

_REFERENCE = re.compile(
    r"(?:\[The Start of Reference Answer\]|<Standard Answer>)\n(.*?)\n(?:\[The End of Reference Answer\]|"
    r"</Standard Answer>)",
    re.DOTALL,
)
_NOISE = re.compile(r"[\s$]|\\boxed\{|\}|\.$")
_VERDICTS = {"CORRECT": "A", "INCORRECT": "B", "INVALID": "C"}


def _plain(text: str) -> str:
    return _NOISE.sub("", text).casefold().rstrip(".")


def judge(text: str, equivalent: dict[str, str] | None = None) -> str:
    """CORRECT, INCORRECT or INVALID for the request `text`."""
    reference = _REFERENCE.search(text)
    fenced = FENCED.search(text)
    answer = fenced.group(2).strip() if fenced else ""
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    if not lines or lines[-1].endswith("...") or lines[-1][-1] not in ".!}$)":
        return "INVALID"
    wanted = _plain(reference.group(1)) if reference else ""
    last = _plain(lines[-1])
    same = [_plain(phrase) for phrase, ref in (equivalent or {}).items() if _plain(ref) == wanted]
    if wanted and (last == wanted or last.endswith("is" + wanted) or any(last.endswith(p) for p in same)):
        return "CORRECT"
    return "INCORRECT"


class FakeVerifier(FakeOpenAI):
    def __init__(self, **behaviour: Any) -> None:
        super().__init__(model="fake-verifier", **{"verify": True, **behaviour})

    @staticmethod
    def _verdict(text: str, script: dict[str, Any]) -> tuple[str, str]:
        if not script.get("verify") or "reply" in script or "label" in script or script.get("refuse"):
            return FakeOpenAI._verdict(text, script)
        verdict = judge(text, script.get("equivalent"))
        if script.get("letters"):
            return _VERDICTS[verdict], ""  # a bare letter; no verdict-code line (it was not asked)
        return f"Compared the final answer with the reference. Verdict: [[{verdict}]]", verdict
