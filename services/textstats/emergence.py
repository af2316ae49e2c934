"""Per-sample signals that tell a reasoning run is healthy or hacking its reward.

Reflection keywords ("wait", "let me reconsider") rising with length is the long-CoT
emergence people watch for; length pinned at the cap, a saturating reward and
repetition are the hacking and collapse signs. Everything here is numeric, so it can
go straight into OpenRLHF's extra_logs, and every sample carries the same keys.
"""

from __future__ import annotations

import re
from functools import cached_property

from arbiter.logkeys import keyword_set, slug, text_stat_keys
from arbiter.openrlhf import strip_eos
from services.common.settings import EmergenceSettings
from services.textstats.textscan import CHUNK_CHARS, has_pair, repeated_ngram_ratio, token_stats, words

__all__ = ["EmergenceStats", "repeated_ngram_ratio", "slug"]

_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")


class EmergenceStats:
    """Computes the emergence logs of one response; built once per server."""

    def __init__(self, settings: EmergenceSettings) -> None:
        self._settings = settings
        # Longest first, so "let me reconsider" is not also counted as a shorter keyword it contains.
        keywords = sorted(keyword_set(settings.keywords), key=len, reverse=True)
        self._keywords = keywords
        self._slugs = {k: slug(k) for k in keywords}
        self._zeros = {f"reflect/{self._slugs[k]}": 0.0 for k in keywords}  # copied per response
        if keywords:
            alternatives = "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in keywords)
            # Matched against lower-cased text: twice as fast as re.IGNORECASE.
            self._pattern: re.Pattern[str] | None = re.compile(rf"(?<![\w-])({alternatives})(?![\w-])")
        else:
            self._pattern = None

    @cached_property
    def keys(self) -> tuple[str, ...]:
        return text_stat_keys(self._keywords)

    def compute(self, response: str, finish_reason: str | None = None) -> dict[str, float]:
        text, had_eos = strip_eos(response, self._settings.eos_markers)
        stopped = finish_reason == "stop" if finish_reason else had_eos
        logs = dict(self._zeros)
        lowered = text.lower()
        total = self._count_keywords(lowered, logs)
        # Whitespace words (4x cheaper than a regex, same trends), each CJK/Thai/... character and
        # each WORD_CAP piece of a longer run a word (textscan.words); counted in bounded memory.
        counted = token_stats(lowered, words, self._settings.repetition_ngram)
        logs.update(
            {
                "reflect/total": float(total),
                "reflect/any": 1.0 if total else 0.0,
                "response/chars": float(len(text)),
                "response/words": float(counted.count),
                "response/stopped": 1.0 if stopped else 0.0,
                "format/think": 1.0 if has_pair(text, "<think>", "</think>") else 0.0,
                "format/answer_tag": 1.0 if has_pair(text, "<answer>", "</answer>") else 0.0,
                "format/boxed": 1.0 if _BOXED_RE.search(text) else 0.0,
                "response/repetition": counted.repetition,
            }
        )
        return logs

    def _count_keywords(self, lowered: str, logs: dict[str, float]) -> int:
        """Count keyword matches into `logs`, one slice of the text per regex call.

        Slices end at `pos + CHUNK_CHARS` but a match is looked for up to 4 KiB further, so a
        keyword across the cut is found once (the lookbehind sees the text before `pos`).
        """
        if self._pattern is None:
            return 0
        total = 0
        position, end_of_text = 0, len(lowered)
        while position < end_of_text:
            cut = position + CHUNK_CHARS
            for match in self._pattern.finditer(lowered, position, min(cut + 4096, end_of_text)):
                if match.start() >= cut:
                    break
                key = " ".join(match.group(1).split())
                logs[f"reflect/{self._slugs.get(key) or slug(key)}"] += 1.0
                total += 1
                position = match.end()
            position = max(position, cut)
        return total
