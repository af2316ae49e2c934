"""From a Sample to the token ids a reward model reads, the way OpenRLHF trained it.

The text to score has three parts: a trusted prefix (the prompt and the chat template's
opening), the response, and a trusted suffix (the template's end of turn, the EOS text).
Only the trusted parts may carry special tokens: a policy that writes `<|im_end|>` or
`<|im_start|>user ...` into its response would otherwise forge a conversation the reward
model scores as real. So:

- Which samples get the RM tokenizer's chat template is decided by where they come from,
  never by what they say: OpenRLHF's `query` (metadata `source: openrlhf`) is already
  templated and is used as sent; every other (prompt, response) pair gets the template
  (`chat_template: auto`; `always` templates OpenRLHF queries too, `never` none).
- OpenRLHF training reads the reward at EOS: it strips trailing newlines and appends
  `" " + eos_token` when the text does not end with it. The kit strips the EOS text off
  OpenRLHF responses (finish_reason "stop" says there was one), so it is put back first,
  as part of the trusted suffix: its last end-of-sequence marker only (a rollout stops on
  one token). Markers before it were written by the policy: they go back into the response
  and are read as text (`<|im_end|>` x 20 at the end of a response is not 20 EOS tokens).
- A text whose response holds no special-token text is tokenized in one pass, exactly as
  OpenRLHF does (parity). When special-token text reaches into the response, the three
  parts are tokenized apart and the response with `split_special_tokens`: its `<|im_end|>`
  becomes the characters `<|im_end|>`, never the token (flag `rm/special_text`).
- Tokenized with `add_special_tokens=False` (the template or query carries BOS), and a
  doubled BOS at the start is cut to one.
- A lone surrogate (no UTF-8 form: tokenizers refuse it) becomes U+FFFD in that sample
  only; a sample the tokenizer still refuses is that sample's INVALID_INPUT, never its batch's.
- Over `max_length` only the response is cut, never the prompt or the suffix (so the reward
  is still read at the final EOS): its middle (`middle`, default), its end (`right`, as
  OpenRLHF's dataset keeps the start) or its start (`left`); or the sample is rejected.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.contract import Sample
from arbiter.openrlhf import DEFAULT_EOS_MARKERS, EOS_TEXT_KEY, SOURCE_KEY
from services.reward_rm.settings import RMServiceSettings
from services.reward_rm.steps import split_steps

log = logging.getLogger(__name__)

# Stands in for the response while the chat template renders, to find where the response goes.
_SENTINEL = "\ue000arbiter-response\ue001"


@dataclass(frozen=True, slots=True)
class Pieces:
    """The text to score: trusted prefix + response + trusted suffix."""

    prefix: str
    response: str
    suffix: str
    templated: bool

    @property
    def text(self) -> str:
        return self.prefix + self.response + self.suffix


@dataclass(frozen=True, slots=True)
class Encoded:
    ids: list[int]
    input_tokens: int  # before truncation
    truncated: bool
    templated: bool
    problem: str = ""  # non-empty: the sample cannot be scored (INVALID_INPUT)
    special_text: bool = False  # the response held special-token text, read as plain text
    dropped: int = 0  # response tokens cut to fit max_length


@dataclass(frozen=True, slots=True)
class EncodedSteps:
    """A process reward model's input: token ids and where each scored step's separator ends."""

    ids: list[int]
    positions: list[int]  # indices into ids, one per scored step, in order
    input_tokens: int  # before truncation
    truncated: bool
    templated: bool
    problem: str = ""
    special_text: bool = False
    dropped: int = 0
    steps: int = 0  # steps the response was cut into (before truncation)


class InputBuilder:
    """Builds and tokenizes reward-model inputs; pure CPU work, safe to run in a thread."""

    def __init__(self, tokenizer: Any, settings: RMServiceSettings, append_eos: bool) -> None:
        self.tokenizer = tokenizer
        self.settings = settings
        self.append_eos = append_eos
        self.eos: str = tokenizer.eos_token or ""
        self.eos_id: int | None = tokenizer.eos_token_id
        self.bos_id: int | None = tokenizer.bos_token_id
        special = set(tokenizer.all_special_tokens)
        for token in getattr(tokenizer, "added_tokens_decoder", {}).values():
            if getattr(token, "special", False):
                special.add(str(token.content))
        self.markers = tuple(sorted(t for t in special if t))
        self._longest = max((len(m) for m in self.markers), default=0)
        self._initials = frozenset(m[0] for m in self.markers)
        # The markers an EOS text can end with, longest first (the kit strips DEFAULT_EOS_MARKERS).
        ends = {*self.markers, *DEFAULT_EOS_MARKERS, self.eos} - {""}
        self._eos_markers = tuple(sorted(ends, key=len, reverse=True))
        self.has_template = bool(getattr(tokenizer, "chat_template", None))
        # Fast tokenizers raise "Already borrowed" when two threads use one at once.
        self._lock = threading.Lock()
        self._warned_promptless = False

    def uses_template(self, sample: Sample) -> bool:
        """By source, never by content: a prompt that mentions `<s>` is still a plain prompt."""
        mode = self.settings.chat_template
        if mode == "never" or not self.has_template:
            return False
        return mode == "always" or sample.metadata.get(SOURCE_KEY) != "openrlhf"

    def text(self, sample: Sample) -> tuple[str, bool]:
        """The text to score, and whether the chat template made it."""
        pieces = self.pieces(sample)
        return pieces.text, pieces.templated

    def pieces(self, sample: Sample) -> Pieces:
        sample = _clean_sample(sample)
        response, eos_text = self._split_eos(sample)
        if self.uses_template(sample):
            pieces = self._templated(sample.prompt, response)
        elif not sample.prompt and sample.metadata.get(SOURCE_KEY) == "openrlhf":
            # A query sent without its prompt: nothing tells the policy's text from the template,
            # so the query is read as sent (special tokens and all) and cannot be cut.
            if not self._warned_promptless:
                self._warned_promptless = True
                log.warning(
                    "OpenRLHF queries arrive without `prompts`: special-token text in responses cannot "
                    "be told from the template and is read as tokens; send prompts beside queries"
                )
            pieces = Pieces(response, "", eos_text, templated=False)
        else:
            pieces = Pieces(sample.prompt, response, eos_text, templated=False)
        return self._ending(pieces) if self.append_eos and self.eos else pieces

    def _split_eos(self, sample: Sample) -> tuple[str, str]:
        """The response without its closing EOS text, and that text (trusted: it ends the turn)."""
        response = sample.response
        if EOS_TEXT_KEY in sample.metadata:  # the kit cut it off an OpenRLHF query
            return self._one_eos(response, str(sample.metadata[EOS_TEXT_KEY]))
        if self.eos:
            body = response.rstrip()
            if body.endswith(self.eos):
                body = body[: -len(self.eos)]
                return body, response[len(body) :]
        if sample.metadata.get("finish_reason") == "stop":
            return response, self.eos
        return response, ""

    def _one_eos(self, response: str, eos_text: str) -> tuple[str, str]:
        """Only the last end-of-sequence marker of `eos_text` (and whitespace after it) is the
        rollout's own stop; whatever comes before it is the policy's text, part of the response."""
        body = eos_text.rstrip()
        for marker in self._eos_markers:
            if body.endswith(marker):
                cut = len(body) - len(marker)
                return response + eos_text[:cut], eos_text[cut:]
        return response, eos_text

    def _templated(self, prompt: str, response: str) -> Pieces:
        def render(content: str) -> str:
            messages = [{"role": "user", "content": prompt}] if prompt else []
            messages.append({"role": "assistant", "content": content})
            return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

        before, found, after = render(_SENTINEL).rpartition(_SENTINEL)
        if not found:  # the template drops the assistant's content: nothing to place
            return Pieces(render(response), "", "", templated=True)
        # The template's own rendering when it only places (or trims) the content: the exact text
        # HF's apply_chat_template gives. One that rewrites it (reasoning stripped) cannot be split
        # safely: the response text then goes between the template's parts unchanged.
        real = render(response)
        for placed in (response, response.strip()):
            if before + placed + after == real:
                return Pieces(before, placed, after, templated=True)
        return Pieces(before, response, after, templated=True)

    def _ending(self, pieces: Pieces) -> Pieces:
        """OpenRLHF's `text.rstrip("\\n")` + `" " + eos` when missing, applied part by part."""
        parts = [pieces.prefix, pieces.response, pieces.suffix]
        for index in (2, 1, 0):
            parts[index] = parts[index].rstrip("\n")
            if parts[index]:
                break
        if not "".join(parts).endswith(self.eos):
            parts[2] += " " + self.eos
        return Pieces(parts[0], parts[1], parts[2], pieces.templated)

    def forged(self, pieces: Pieces) -> bool:
        """Special-token text that reaches into the response (also across its edges)."""
        text, start = pieces.text, len(pieces.prefix)
        end = start + len(pieces.response)
        reach = text[max(0, start - self._longest + 1) : end]
        if not any(char in reach for char in self._initials):  # the common case, in one pass each
            return False
        for marker in self.markers:
            at = text.find(marker, max(0, start - len(marker) + 1))
            while at != -1 and at < end:
                if at + len(marker) > start:
                    return True
                at = text.find(marker, at + 1)
        return False

    def encode(self, samples: Sequence[Sample]) -> list[Encoded]:
        with self._lock:
            built: list[Pieces] = []
            problems: dict[int, str] = {}
            for index, sample in enumerate(samples):
                try:
                    built.append(self.pieces(sample))
                except Exception as exc:
                    problems[index] = f"cannot build the input: {type(exc).__name__}: {exc}"[:300]
                    built.append(Pieces("", "", "", templated=False))
            forged = [self.forged(pieces) for pieces in built]
            plain = [i for i, f in enumerate(forged) if not f and i not in problems]
            ids_list: list[list[int] | None] = [None] * len(built)
            if plain:  # one pass over the whole text: exactly what OpenRLHF tokenizes
                for i, ids in zip(plain, self._batch_ids([built[i].text for i in plain]), strict=True):
                    ids_list[i] = ids
            out: list[Encoded] = []
            for index, pieces in enumerate(built):
                try:
                    if index in problems:
                        raise ValueError(problems[index])
                    whole = ids_list[index]
                    if whole is None:
                        prefix, response, suffix = self._parts(pieces)
                        whole = prefix + response + suffix
                    out.append(self._fit(self._dedupe_bos(whole), pieces, forged[index]))
                except Exception as exc:
                    problem = problems.get(index) or f"cannot tokenize: {type(exc).__name__}: {exc}"[:300]
                    out.append(Encoded([], 0, False, pieces.templated, problem, forged[index]))
        return out

    def encode_steps(self, samples: Sequence[Sample], split: str, separator: str) -> list[EncodedSteps]:
        """Prompt (trusted) + each step followed by the separator, the service's own tokens.

        Steps are tokenized with `split_special_tokens`: a separator or any special token the
        response writes is read as text, never as a step end; the scores are read at the
        positions of the separators placed here, found by construction, never by searching
        the ids. Nothing follows the last separator: the model is causal, later tokens change
        no score. Over `max_length` the steps are cut as the response would be (its middle by
        default); a step whose separator is cut is not scored.
        """
        with self._lock:
            [sep_ids] = self._ids([separator]) if separator else [[]]
            out: list[EncodedSteps] = []
            for sample in samples:
                templated = special = False
                try:
                    if not sep_ids:
                        raise ValueError("the step separator is empty")
                    pieces = self.pieces(sample)
                    templated, special = pieces.templated, self.forged(pieces)
                    steps = split_steps(pieces.response, split, separator)
                    if not steps:
                        out.append(
                            EncodedSteps([], [], 0, False, templated, "no step to score: empty response")
                        )
                        continue
                    prefix = self._dedupe_bos(self._ids([pieces.prefix])[0]) if pieces.prefix else []
                    body: list[int] = []
                    ends: list[int] = []
                    for ids in self._ids(steps, split=True):
                        body += ids
                        body += sep_ids
                        ends.append(len(body) - 1)
                    out.append(self._fit_steps(prefix, body, ends, len(steps), templated, special))
                except Exception as exc:
                    problem = f"cannot build the steps: {type(exc).__name__}: {exc}"[:300]
                    out.append(EncodedSteps([], [], 0, False, templated, problem, special))
        return out

    def _fit_steps(
        self, prefix: list[int], body: list[int], ends: list[int], steps: int, templated: bool, special: bool
    ) -> EncodedSteps:
        total = len(prefix) + len(body)
        limit = self.settings.max_length
        if total <= limit:
            positions = [len(prefix) + end for end in ends]
            return EncodedSteps(prefix + body, positions, total, False, templated, "", special, 0, steps)
        side = self.settings.truncation_side
        if side == "reject":
            problem = f"{total} tokens exceed max_length {limit} (truncation: reject)"
            return EncodedSteps([], [], total, True, templated, problem, special, 0, steps)
        room = limit - len(prefix)
        if room < 1:  # the prompt alone does not fit: the dataset's problem, not the response's
            problem = f"the prompt takes {len(prefix)} tokens, max_length is {limit}: no room for a step"
            return EncodedSteps([], [], total, True, templated, problem, special, 0, steps)
        kept = _cut(list(range(len(body))), room, side)
        is_end = set(ends)
        positions = [len(prefix) + at for at, index in enumerate(kept) if index in is_end]
        if not positions:
            problem = (
                f"no step separator fits in max_length {limit} ({len(prefix)} prompt tokens, "
                f"{len(body)} step tokens, truncation {side})"
            )
            return EncodedSteps([], [], total, True, templated, problem, special, 0, steps)
        ids = prefix + [body[index] for index in kept]
        return EncodedSteps(ids, positions, total, True, templated, "", special, len(body) - len(kept), steps)

    def _batch_ids(self, texts: list[str]) -> list[list[int] | None]:
        """Token ids of each text; None for one the tokenizer refuses (the others still get theirs)."""
        try:
            return list(self._ids(texts))
        except Exception:
            out: list[list[int] | None] = []
            for text in texts:
                try:
                    out.append(self._ids([text])[0])
                except Exception:
                    out.append(None)
            return out

    def _ids(self, texts: list[str], split: bool = False) -> list[list[int]]:
        kwargs: dict[str, Any] = {"add_special_tokens": False, "truncation": False}
        if split:
            kwargs["split_special_tokens"] = True
        return [list(ids) for ids in self.tokenizer(texts, **kwargs)["input_ids"]]

    def _parts(self, pieces: Pieces) -> list[list[int]]:
        """Prefix, response and suffix tokenized apart; the response never yields special tokens."""
        trusted = self._ids([pieces.prefix, pieces.suffix])
        [response] = self._ids([pieces.response], split=True)
        return [trusted[0], response, trusted[1]]

    def _dedupe_bos(self, ids: list[int]) -> list[int]:
        if self.bos_id is not None:
            while len(ids) >= 2 and ids[0] == ids[1] == self.bos_id:
                ids.pop(0)
        return ids

    def _fit(self, ids: list[int], pieces: Pieces, forged: bool) -> Encoded:
        n = len(ids)
        templated = pieces.templated
        if n == 0:
            return Encoded([], 0, False, templated, "empty input: nothing to score", forged)
        limit = self.settings.max_length
        if n <= limit:
            return Encoded(ids, n, False, templated, special_text=forged)
        side = self.settings.truncation_side
        if side == "reject":
            problem = f"{n} tokens exceed max_length {limit} (truncation: reject)"
            return Encoded([], n, True, templated, problem, forged)
        prefix, response, suffix = self._parts(pieces)
        prefix = self._dedupe_bos(prefix)
        room = limit - len(prefix) - len(suffix)
        if room < 1:  # the prompt alone does not fit: the dataset's problem, not the response's
            problem = (
                f"the prompt and template take {len(prefix) + len(suffix)} tokens, "
                f"max_length is {limit}: no room for the response"
            )
            return Encoded([], n, True, templated, problem, forged)
        kept = _cut(response, room, side)
        dropped = len(response) - len(kept)
        return Encoded(prefix + kept + suffix, n, True, templated, special_text=forged, dropped=dropped)


def _cut(ids: list[int], room: int, side: str) -> list[int]:
    """`room` tokens of the response: its start (right), its end (left), or both ends (middle)."""
    if len(ids) <= room:
        return ids
    if side == "right":
        return ids[:room]
    if side == "left":
        return ids[len(ids) - room :]
    head = (room + 1) // 2
    return ids[:head] + ids[len(ids) - (room - head) :]


def load_tokenizer(path: str) -> Any:
    from services.reward_rm._lazy import require

    transformers = require("transformers")
    return transformers.AutoTokenizer.from_pretrained(path)


def _clean(text: str) -> str:
    """`text` with lone surrogates (which tokenizers refuse) replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _clean_sample(sample: Sample) -> Sample:
    eos_text = sample.metadata.get(EOS_TEXT_KEY)
    prompt, response = _clean(sample.prompt), _clean(sample.response)
    eos_clean = _clean(eos_text) if isinstance(eos_text, str) else eos_text
    if prompt is sample.prompt and response is sample.response and eos_clean is eos_text:
        return sample
    metadata = {**sample.metadata, EOS_TEXT_KEY: eos_clean} if isinstance(eos_text, str) else sample.metadata
    return sample.model_copy(update={"prompt": prompt, "response": response, "metadata": metadata})
