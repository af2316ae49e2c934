"""Linear-time scans of a response for paired tags (`<think>...</think>`, `<answer>...</answer>`).

A lazy regex such as `<answer>(.*?)</answer>` restarts at every unmatched opening tag and
scans to the end of the text from each: a rollout that loops `<think>` 16,000 times costs
seconds per sample. These helpers find tags with one forward pass (each character is read a
bounded number of times), so their cost is linear in the response's length whatever it holds.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache


@lru_cache(maxsize=64)
def _tag(tag: str) -> re.Pattern[str]:
    # A literal, case-insensitive: the regex engine tries it at each position once (no backtracking).
    return re.compile(re.escape(tag), re.IGNORECASE)


def has_pair(text: str, open_tag: str, close_tag: str) -> bool:
    """Whether an `open_tag` is followed (anywhere later) by a `close_tag`, case-insensitive.

    The same answer as `re.search(open + ".*?" + close, text, DOTALL | IGNORECASE)`: if any
    opening tag has a closing tag after it, the first opening tag does too.
    """
    opened = _tag(open_tag).search(text)
    return opened is not None and _tag(close_tag).search(text, opened.end()) is not None


def pair_contents(text: str, open_tag: str, close_tag: str) -> list[str]:
    """What `re.findall(open + "(.*?)" + close, text, DOTALL | IGNORECASE)` returns, in linear time.

    From each opening tag the nearest closing tag after it ends the match; the next match starts
    after that closing tag. Once an opening tag has no closing tag after it, no later one has.
    """
    opening, closing = _tag(open_tag), _tag(close_tag)
    found: list[str] = []
    position = 0
    while True:
        opened = opening.search(text, position)
        if opened is None:
            return found
        closed = closing.search(text, opened.end())
        if closed is None:
            return found
        found.append(text[opened.end() : closed.start()])
        position = closed.end()


# Each C-level call (a split, a findall, a set of n-grams) covers at most this much text, so a
# thread doing the scan hands the GIL back to the event loop every few milliseconds.
CHUNK_CHARS = 1 << 18
# Repetition is measured over at most this many tokens at each end of a longer response: memory and
# time stay bounded (a 30 MB loop of "." would otherwise become 30 million strings), and a loop
# that runs to the length cap is always at the end.
REPETITION_WINDOW = 100_000

_SPACE = re.compile(r"\s")

# Scripts written without spaces between words (Han, Kana, Bopomofo, Yi, Thai, Lao, Khmer, Myanmar,
# Tibetan), and Hangul: each character is a token of its own, as a BPE tokenizer gives it about one.
# Counting whitespace-free runs as one word let `让我再检查一遍` x 20,000 count 9 tokens and 0 repetition.
NO_SPACE_SCRIPTS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi
    "\u3040-\u31ff"  # Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua000-\ua4cf"  # Yi
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
# The longest run of other word characters counted as one token: a longer run (a loop joined by
# underscores, digits, letters without spaces) counts ceil(len / WORD_CAP) tokens, its pieces of
# WORD_CAP characters, so a loop without spaces repeats n-grams of pieces like a spaced loop does.
WORD_CAP = 20
_SCRIPT_CHAR = re.compile(f"[{NO_SPACE_SCRIPTS}]")
# Each no-space-script character; runs of other word characters (cut at WORD_CAP); each other mark.
TOKEN_RE = re.compile(rf"[{NO_SPACE_SCRIPTS}]|[^\W{NO_SPACE_SCRIPTS}]{{1,{WORD_CAP}}}|[^\w\s]")
_WORD_RE = re.compile(rf"[{NO_SPACE_SCRIPTS}]|[^\s{NO_SPACE_SCRIPTS}]{{1,{WORD_CAP}}}")


def tokens(text: str) -> list[str]:
    """A pre-tokenizer's view of `text`: words (cut at WORD_CAP characters), each punctuation mark,
    symbol or emoji, and each character of a script written without spaces."""
    return TOKEN_RE.findall(text)


def words(text: str) -> list[str]:
    """Whitespace words, but a no-space-script character is a word of its own and a run longer than
    WORD_CAP counts as its WORD_CAP-character pieces. Plain `str.split` (4x cheaper than a regex)
    whenever that is the same answer."""
    split = text.split()
    if (text.isascii() or _SCRIPT_CHAR.search(text) is None) and max(map(len, split), default=0) <= WORD_CAP:
        return split
    return _WORD_RE.findall(text)


def chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """Consecutive pieces of `text` of about `size` characters, cut at whitespace.

    A token that does not span whitespace never spans two pieces; a text without whitespace is
    cut at `size` anyway (a token there may count twice: one in a quarter-million characters).
    """
    start, end_of_text = 0, len(text)
    while start < end_of_text:
        end = start + size
        if end >= end_of_text:
            yield text[start:]
            return
        space = _SPACE.search(text, end, end + size)
        cut = space.start() if space is not None else end
        yield text[start:cut]
        start = cut


@dataclass(frozen=True, slots=True)
class TokenStats:
    count: int
    repetition: float  # share of n-grams that repeat an earlier one (see `repeated_ngram_ratio`)


def repeated_ngram_ratio(tokens: Sequence[str], n: int) -> float:
    """Share of n-grams that repeat an earlier one: 0 for fresh text, -> 1 for a loop."""
    total = len(tokens) - n + 1
    if total <= 1:
        return 0.0
    seen: set[tuple[str, ...]] = set()
    step = CHUNK_CHARS // 4
    for start in range(0, total, step):  # in slices: a long set build never holds the GIL for long
        stop = min(start + step, total)
        seen.update(zip(*(tokens[start + i : stop + i] for i in range(n)), strict=False))
    return 1.0 - len(seen) / total


def token_stats(text: str, tokenize: Callable[[str], list[str]], ngram: int) -> TokenStats:
    """How many tokens `tokenize` finds in `text`, and their repeated n-gram ratio, in bounded memory.

    `tokenize` must not produce tokens that span whitespace. Up to 2 x REPETITION_WINDOW tokens the
    ratio covers all of them; beyond, it is the larger of the ratios of the first and the last
    REPETITION_WINDOW tokens.
    """
    if len(text) <= CHUNK_CHARS:  # nearly every response: one call, no windows to keep
        tokens = tokenize(text)
        if len(tokens) <= 2 * REPETITION_WINDOW:
            return TokenStats(len(tokens), repeated_ngram_ratio(tokens, ngram))
    count = 0
    head: list[str] = []
    tail: collections.deque[str] = collections.deque(maxlen=REPETITION_WINDOW)
    for piece in chunks(text):
        tokens = tokenize(piece)
        count += len(tokens)
        if len(head) < REPETITION_WINDOW:
            head.extend(tokens[: REPETITION_WINDOW - len(head)])
        tail.extend(tokens)
    if count <= 2 * REPETITION_WINDOW:
        rest = count - len(head)
        everything = head + (list(tail)[-rest:] if rest > 0 else [])
        return TokenStats(count, repeated_ngram_ratio(everything, ngram))
    ratio = max(repeated_ngram_ratio(head, ngram), repeated_ngram_ratio(list(tail), ngram))
    return TokenStats(count, ratio)
