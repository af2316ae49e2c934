"""`RMGrader` (grader name "rm"): a reward model as an Arbiter grader.

reward = the value head at the last token (EOS), normalized by the checkpoint's mean/std
when configured, through a sigmoid only when configured; score = reward (what OpenRLHF's
serve_rm.py answers too). Per-sample logs: `rm/tokens` (before truncation), `rm/truncated`,
`rm/dropped_tokens` (response tokens cut), `rm/templated`, `rm/special_text` (the response
held special-token text, read as plain text), `rm/raw_reward` (the head value before
normalization).

A process reward model (checkpoint kind `prm`) scores every step of the response instead:
reward = score = the configured aggregate of the step scores (each P(step is good)), with
`rm/steps` (steps scored), `rm/min_step` and `rm/first_bad_step` (1-based, 0: none) in the logs
besides the ones above.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from arbiter.contract import GraderInfo, Result, Sample, Status
from services.reward_rm.backends.base import BackendError, RMBackend
from services.reward_rm.backends.factory import make_backend
from services.reward_rm.checkpoint import CheckpointError, CheckpointInfo, read_checkpoint
from services.reward_rm.inputs import Encoded, EncodedSteps, InputBuilder, load_tokenizer
from services.reward_rm.metrics import RMMetrics
from services.reward_rm.settings import RMServiceSettings
from services.reward_rm.steps import aggregate, first_bad
from services.scoring.grader import GraderBase, config_hash

# 1.1: the prompt stays in view past max_length; response text never becomes special tokens;
# the chat template is applied by source.
VERSION = "1.1.0"
LOG_KEYS = (
    "rm/tokens",
    "rm/truncated",
    "rm/dropped_tokens",
    "rm/templated",
    "rm/special_text",
    "rm/raw_reward",
)
PRM_LOG_KEYS = (*LOG_KEYS, "rm/steps", "rm/min_step", "rm/first_bad_step")

BackendFactory = Callable[[CheckpointInfo, RMServiceSettings], RMBackend]


class RMGrader(GraderBase):
    """Cheap to construct (reads config.json only); the tokenizer and model load at `start`
    or on the first batch."""

    _log_keys: tuple[str, ...] = LOG_KEYS

    def __init__(self, settings: RMServiceSettings, backend_factory: BackendFactory = make_backend) -> None:
        self.settings = settings
        self.checkpoint: CheckpointInfo | None = None
        self.problem = ""
        if not settings.checkpoint:
            self.problem = "reward_rm.checkpoint is not set (ARBITER_REWARD_RM__CHECKPOINT=/path/to/model)"
        else:
            try:
                self.checkpoint = read_checkpoint(settings.checkpoint, settings.value_head_prefix)
            except CheckpointError as exc:
                self.problem = str(exc)
        self.backend: RMBackend | None = (
            backend_factory(self.checkpoint, settings) if self.checkpoint is not None else None
        )
        fingerprint: dict[str, Any] = {**settings.fingerprint(), "weights": self._weights_id()}
        self.process = self.checkpoint is not None and self.checkpoint.kind == "prm"
        self._log_keys = PRM_LOG_KEYS if self.process else LOG_KEYS
        kind = "process_reward_model" if self.process else "reward_model"
        self._info = GraderInfo(
            name="rm",
            version=VERSION,
            config_hash=config_hash(fingerprint),
            capabilities=[kind, settings.backend],
            log_keys=list(self._log_keys),
        )
        self.metrics = RMMetrics(lambda: getattr(self.backend, "stats", None))
        self._builder: InputBuilder | None = None
        self._starting: asyncio.Lock | None = None
        self._recent: collections.deque[float] = collections.deque(maxlen=settings.floor_window)
        self._floor: float | None = None  # min(self._recent), kept up to date lazily

    @property
    def normalize(self) -> bool:
        if self.settings.normalize is not None:
            return self.settings.normalize
        return self.checkpoint is not None and self.checkpoint.normalize_reward

    async def start(self) -> None:
        """Load the tokenizer and the model (or reach the server) before the first request."""
        if self._builder is not None:
            return
        if self.checkpoint is None or self.backend is None:
            raise CheckpointError(self.problem)
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._builder is None:
                checkpoint = self.checkpoint
                tokenizer = await asyncio.to_thread(
                    load_tokenizer, self.settings.tokenizer or str(checkpoint.path)
                )
                append_eos = self.settings.append_eos
                if append_eos is None or checkpoint.kind == "prm":  # a PRM reads steps, not the EOS
                    append_eos = checkpoint.kind == "openrlhf"
                await self.backend.start()
                self._builder = InputBuilder(tokenizer, self.settings, append_eos)

    async def score(self, samples: Sequence[Sample]) -> list[Result]:
        try:
            await self.start()
        except Exception as exc:  # every sample learns why; the kit need not retry one by one
            detail = f"reward model unavailable: {exc}"
            return [self._failure(Status.GRADER_ERROR, detail[:500]) for _ in samples]
        builder, backend = self._builder, self.backend
        assert builder is not None and backend is not None
        if self.process:
            return await self._score_steps(samples, builder, backend)
        encoded = await asyncio.to_thread(self._timed, builder.encode, samples)
        usable = [i for i, item in enumerate(encoded) if not item.problem]
        # Identical inputs are scored once: less work, and equal texts get exactly equal rewards.
        unique = list(dict.fromkeys(tuple(encoded[i].ids) for i in usable))
        try:
            values = await backend.rewards(unique) if unique else []
        except BackendError as exc:  # the model server failed: say so per sample, retrying is its job
            return [
                self._failure(Status.INVALID_INPUT, item.problem, item)
                if item.problem
                else self._failure(Status.UPSTREAM_ERROR, str(exc)[:500], item)
                for item in encoded
            ]
        by_ids = dict(zip(unique, values, strict=True))
        by_index = {i: by_ids[tuple(encoded[i].ids)] for i in usable}
        results: list[Result] = []
        for index, item in enumerate(encoded):
            if item.problem:
                results.append(self._failure(Status.INVALID_INPUT, item.problem, item))
            else:
                results.append(self._result(by_index[index], backend.normalized, item))
        return results

    async def _score_steps(
        self, samples: Sequence[Sample], builder: InputBuilder, backend: RMBackend
    ) -> list[Result]:
        prm = self.settings.prm
        encoded = await asyncio.to_thread(
            self._timed, builder.encode_steps, samples, prm.split, prm.step_separator
        )
        usable = [i for i, item in enumerate(encoded) if not item.problem]
        keys = {i: (tuple(encoded[i].ids), tuple(encoded[i].positions)) for i in usable}
        unique = list(dict.fromkeys(keys.values()))
        try:
            scores = (
                await backend.step_scores([k[0] for k in unique], [k[1] for k in unique]) if unique else []
            )
        except BackendError as exc:
            return [
                self._failure(Status.INVALID_INPUT, item.problem, item)
                if item.problem
                else self._failure(Status.UPSTREAM_ERROR, str(exc)[:500], item)
                for item in encoded
            ]
        by_key = dict(zip(unique, scores, strict=True))
        results: list[Result] = []
        for index, item in enumerate(encoded):
            if item.problem:
                results.append(self._failure(Status.INVALID_INPUT, item.problem, item))
            else:
                results.append(self._step_result(by_key[keys[index]], item))
        return results

    def _step_result(self, scores: list[float], item: EncodedSteps) -> Result:
        prm = self.settings.prm
        if len(scores) != len(item.positions) or not all(math.isfinite(v) for v in scores):
            return self._failure(Status.GRADER_ERROR, f"the process reward model produced {scores[:8]}", item)
        reward = aggregate(scores, prm.aggregate)
        logs = self._logs(item, reward)
        logs.update(
            {
                "rm/steps": float(len(scores)),
                "rm/min_step": min(scores),
                "rm/first_bad_step": float(first_bad(scores, prm.bad_step)),
            }
        )
        self._observe(reward)
        detail = f"{len(scores)} steps scored ({prm.aggregate} {reward:.4f}), {item.input_tokens} tokens"
        if item.truncated:
            detail += (
                f", truncated to {len(item.ids)} (max_length {self.settings.max_length}): "
                f"{item.steps - len(scores)} of {item.steps} steps not scored"
            )
        if item.special_text:
            detail += ", special-token text in the response read as plain text"
        return Result(reward=reward, score=reward, status=Status.OK, detail=detail, logs=logs)

    @property
    def metrics_registry(self) -> Any:
        """The RM's own Prometheus metrics (tokenization and forward time, padding), at /metrics."""
        return self.metrics.registry

    def _timed(self, encode: Callable[..., Any], *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return encode(*args)
        finally:
            self.metrics.tokenized(time.perf_counter() - started, len(args[0]))

    async def aclose(self) -> None:
        if self.backend is not None:
            await self.backend.aclose()

    def failure_reward(self, configured: float) -> float:
        """What a sample that could not be scored gets (the kit asks; see HasFailureReward).

        An RM's rewards have no fixed scale: a constant 0.0 can sit above all of them, and then
        any failure a response can cause is a gain. The floor (the lowest reward of the last
        `floor_window` scored samples) never is. Before the first scored sample, `configured`.
        """
        if self.settings.failure_reward == "fixed" or not self._recent:
            return configured
        if self._floor is None:
            self._floor = min(self._recent)
        return self._floor

    # -- helpers ------------------------------------------------------------------------

    def _result(self, value: float, normalized: bool, item: Encoded) -> Result:
        assert self.checkpoint is not None
        mean, std = self.checkpoint.mean, self.checkpoint.std
        raw = value * std + mean if normalized else value
        reward = raw
        if self.normalize:
            reward = value if normalized else (raw - mean) / std
        if self.settings.activation == "sigmoid" and math.isfinite(reward):
            reward = _sigmoid(reward)
        logs = self._logs(item, raw if math.isfinite(raw) else 0.0)
        if not math.isfinite(reward):
            return self._failure(Status.GRADER_ERROR, f"the reward model produced {value}", item)
        self._observe(reward)
        detail = f"{item.input_tokens} tokens"
        if item.truncated:
            kept = _KEPT[self.settings.truncation_side]
            detail += (
                f", truncated to {len(item.ids)} (max_length {self.settings.max_length}): "
                f"{item.dropped} response tokens cut, kept the prompt and {kept}"
            )
        if item.special_text:
            detail += ", special-token text in the response read as plain text"
        return Result(reward=reward, score=reward, status=Status.OK, detail=detail, logs=logs)

    def _failure(self, status: Status, detail: str, item: Encoded | EncodedSteps | None = None) -> Result:
        logs = self._logs(item, 0.0) if item is not None else dict.fromkeys(self._log_keys, 0.0)
        # The kit replaces it with failure_reward too; callers of the grader itself see the same.
        reward = self.failure_reward(self.settings.fallback_reward)
        return Result(reward=reward, score=0.0, status=status, detail=detail, logs=logs)

    def _observe(self, reward: float) -> None:
        if len(self._recent) == self._recent.maxlen and self._recent[0] == self._floor:
            self._floor = None  # the floor leaves the window: recomputed when next asked
        self._recent.append(reward)
        if self._floor is not None and reward < self._floor:
            self._floor = reward

    def _logs(self, item: Encoded | EncodedSteps | None, raw: float) -> dict[str, float]:
        logs = dict.fromkeys(self._log_keys, 0.0)  # the same keys on every result, failed or not
        if item is not None:
            logs.update(
                {
                    "rm/tokens": float(item.input_tokens),
                    "rm/truncated": float(item.truncated),
                    "rm/dropped_tokens": float(item.dropped),
                    "rm/templated": float(item.templated),
                    "rm/special_text": float(item.special_text),
                    "rm/raw_reward": raw,
                }
            )
        return logs

    def _weights_id(self) -> str:
        return self.checkpoint.fingerprint if self.checkpoint is not None else ""


_KEPT = {
    "middle": "the response's start and end",
    "right": "the response's start",
    "left": "the response's end",
    "reject": "",
}


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
