"""The transformers backend: the model in this process, CPU (fp32) by default, GPU capable.

Forward passes run in one dedicated thread, one at a time (a CPU forward already uses
every core; a GPU runs one stream), under `torch.inference_mode`. Each grader batch is
re-split by token budget, sorted by length and padded only within a sub-batch; on a GPU the
inputs go through page-locked memory and every sub-batch is queued before the first result is
read back. The reward is read as OpenRLHF does: the value head at the last non-pad token
(right padding on a causal model needs no attention mask; left padding takes position ids
from the mask, so it changes nothing either). A process reward model's head is read at the
step separators' positions instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.reward_rm._lazy import require
from services.reward_rm.backends.batching import plan_batches
from services.reward_rm.checkpoint import CheckpointError, CheckpointInfo
from services.reward_rm.settings import RMServiceSettings

log = logging.getLogger(__name__)

_DTYPES = {"float32", "bfloat16", "float16"}


class TransformersBackend:
    def __init__(self, checkpoint: CheckpointInfo, settings: RMServiceSettings) -> None:
        self.checkpoint = checkpoint
        self.settings = settings
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._model: _LoadedModel | None = None
        self._loading: asyncio.Lock | None = None

    @property
    def name(self) -> str:
        return "transformers"

    @property
    def normalized(self) -> bool:
        return False  # the grader applies mean/std

    @property
    def stats(self) -> ForwardStats | None:
        return self._model.stats if self._model is not None else None

    async def start(self) -> None:
        if self._model is not None:
            return
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            if self._model is None:
                loop = asyncio.get_running_loop()
                self._model = await loop.run_in_executor(self._pool(), self._load)

    async def rewards(self, inputs: Sequence[Sequence[int]]) -> list[float]:
        readings = await self._run([list(ids) for ids in inputs], None)
        return [values[0] for values in readings]

    async def step_scores(
        self, inputs: Sequence[Sequence[int]], positions: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        return await self._run([list(ids) for ids in inputs], [list(at) for at in positions])

    async def _run(self, inputs: list[list[int]], picks: list[list[int]] | None) -> list[list[float]]:
        await self.start()
        model = self._model
        assert model is not None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), model.score_all, inputs, picks)

    async def aclose(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        self._model = None

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rm-forward")
        return self._executor

    def _load(self) -> _LoadedModel:
        torch = require("torch")
        transformers = require("transformers")
        settings = self.settings
        checkpoint = self.checkpoint
        if settings.torch_threads:
            torch.set_num_threads(settings.torch_threads)
        device = torch.device(settings.device)
        dtype = getattr(torch, _resolve_dtype(settings.dtype, device.type, checkpoint.torch_dtype))
        major = int(transformers.__version__.split(".")[0])
        kwargs: dict[str, Any] = {"dtype" if major >= 5 else "torch_dtype": dtype, "trust_remote_code": False}
        if settings.attn_implementation:
            kwargs["attn_implementation"] = settings.attn_implementation
        path = str(checkpoint.path)
        causal = _is_causal(transformers, checkpoint.model_type)
        with _quiet(transformers):
            if checkpoint.kind == "openrlhf" or checkpoint.head == "qwen2_prm":
                # AutoModel drops the head (OpenRLHF's value head, Qwen2-PRM's MLP): loaded by name.
                base, info = transformers.AutoModel.from_pretrained(path, output_loading_info=True, **kwargs)
                _check_loaded(info, path)
                head = _named_head(torch, checkpoint, base.config.hidden_size)
                readout = "step" if checkpoint.kind == "prm" else "value"
                model = _LoadedModel(
                    torch,
                    base.to(device),
                    head.to(device=device, dtype=dtype),
                    None,
                    settings,
                    readout,
                    causal,
                )
            elif checkpoint.kind == "prm":
                full, info = transformers.AutoModelForTokenClassification.from_pretrained(
                    path, output_loading_info=True, **kwargs
                )
                _check_loaded(info, path)
                full = full.to(device)
                head = getattr(full, checkpoint.value_head_prefix, None)
                base = getattr(full, full.base_model_prefix, None)
                if not isinstance(head, torch.nn.Linear) or base is None:
                    raise CheckpointError(
                        f"{path}: no token-classification head {checkpoint.value_head_prefix!r}"
                    )
                model = _LoadedModel(torch, base, head, None, settings, "step", causal)
            else:
                full, info = transformers.AutoModelForSequenceClassification.from_pretrained(
                    path, output_loading_info=True, **kwargs
                )
                _check_loaded(info, path)
                full = full.to(device)
                head = getattr(full, checkpoint.value_head_prefix, None)
                base = getattr(full, full.base_model_prefix, None)
                if isinstance(head, torch.nn.Linear) and base is not None:
                    model = _LoadedModel(torch, base, head, None, settings, "value", causal)
                else:  # encoder classifiers (pooling on the first token): their own forward
                    model = _LoadedModel(torch, None, None, full, settings)
        log.info(
            "reward model %s loaded on %s (%s, attention %s%s)",
            path,
            device,
            dtype,
            getattr(
                model.base.config if model.base is not None else model.whole.config,
                "_attn_implementation",
                "?",
            ),
            ", unmasked causal" if model.unmasked else "",
        )
        return model


class _LoadedModel:
    """A loaded model and how to read it: the head at the last token (a reward model), at chosen
    positions (a process reward model's step separators), or the model's own forward (encoder
    classifiers)."""

    def __init__(
        self,
        torch: Any,
        base: Any,
        head: Any,
        whole: Any,
        settings: RMServiceSettings,
        readout: str = "value",
        causal: bool = False,
    ) -> None:
        self.torch = torch
        self.base: Any = base.eval() if base is not None else None
        self.head: Any = head.eval() if head is not None else None
        self.whole: Any = whole.eval() if whole is not None else None
        self.settings = settings
        self.readout = readout  # value: the head's one output; step: P(good) per position
        modules = [m for m in (self.base, self.whole) if m is not None]
        self.device = next(modules[0].parameters()).device
        # Encoder classifiers count positions from the first token: pad on the right only.
        self.padding_side = settings.padding_side if self.whole is None else "right"
        # Right padding on a causal model: pads come after every real token, so no real token
        # attends to one and the mask changes nothing there. Without it attention runs the fused
        # causal kernels (SDPA's flash path on a GPU) instead of a masked one.
        self.unmasked = (
            causal
            and self.whole is None
            and self.padding_side == "right"
            and settings.attention_mask == "auto"
        )
        self.pinned = self.device.type == "cuda"
        self.stats = ForwardStats()

    def score_all(self, inputs: list[list[int]], picks: list[list[int]] | None = None) -> list[list[float]]:
        """The head's reading at `picks[i]` of each input (default: its last token), in order.

        Every sub-batch is launched before any result is read back: on a GPU the host builds
        the next batch while the device runs the last, and waits once at the end.
        """
        started = time.perf_counter()
        lengths = [len(ids) for ids in inputs]
        if picks is None:
            picks = [[n - 1] for n in lengths]
        settings = self.settings
        plan = plan_batches(lengths, settings.token_budget, settings.max_forward_batch, settings.max_padding)
        pending = [
            (batch, self.forward([inputs[i] for i in batch], [picks[i] for i in batch])) for batch in plan
        ]
        out: list[list[float]] = [[] for _ in inputs]
        for batch, (values, counts) in pending:
            flat = [float(v) for v in values.float().cpu().tolist()]  # a non-finite value fails its sample
            at = 0
            for index, count in zip(batch, counts, strict=True):
                out[index] = flat[at : at + count]
                at += count
        stats = self.stats
        stats.calls += 1
        stats.forwards += len(plan)
        stats.samples += len(inputs)
        stats.real_tokens += sum(lengths)
        stats.padded_tokens += sum(len(batch) * max(lengths[i] for i in batch) for batch in plan)
        stats.seconds += time.perf_counter() - started
        return out

    def forward(self, batch: list[list[int]], picks: list[list[int]]) -> tuple[Any, list[int]]:
        """One padded forward; the readings (still on the device) and how many belong to each row."""
        torch = self.torch
        width = max(len(ids) for ids in batch)
        left = self.padding_side == "left"
        flat: list[int] = []
        rows: list[int] = []
        cols: list[int] = []
        for row, (ids, at) in enumerate(zip(batch, picks, strict=True)):
            pad = [0] * (width - len(ids))
            flat.extend(pad + ids if left else ids + pad)
            offset = len(pad) if left else 0
            rows.extend([row] * len(at))
            cols.extend(offset + c for c in at)
        input_ids = self._to_device(torch.tensor(flat, dtype=torch.long).view(len(batch), width))
        mask = None
        if not self.unmasked:
            mask_rows = [
                ([0] * (width - len(ids)) + [1] * len(ids))
                if left
                else ([1] * len(ids) + [0] * (width - len(ids)))
                for ids in batch
            ]
            mask = self._to_device(torch.tensor(mask_rows, dtype=torch.long))
        with torch.inference_mode():
            if self.whole is not None:
                logits = self.whole(input_ids=input_ids, attention_mask=mask).logits
                return logits[:, 0], [1] * len(batch)
            kwargs: dict[str, Any] = {"use_cache": False}
            if mask is not None:
                positions = mask.cumsum(-1) - 1
                positions.masked_fill_(mask == 0, 1)
                kwargs.update(attention_mask=mask, position_ids=positions)
            out = self.base(input_ids=input_ids, **kwargs)
            hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
            index_rows = self._to_device(torch.tensor(rows, dtype=torch.long))
            index_cols = self._to_device(torch.tensor(cols, dtype=torch.long))
            logits = self.head(hidden[index_rows, index_cols])
            values = step_probability(torch, logits) if self.readout == "step" else logits.squeeze(-1)
        return values, [len(at) for at in picks]

    def _to_device(self, tensor: Any) -> Any:
        if self.pinned:  # page-locked: the copy runs asynchronously, overlapping the host's work
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor.to(self.device)


@dataclass
class ForwardStats:
    """Counters of the forward thread (read by the service's /metrics): where the time goes."""

    calls: int = 0
    forwards: int = 0
    samples: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0  # rows x longest row, summed over forwards
    seconds: float = 0.0  # in the forward thread: batch building, copies, the model, reading back


def step_probability(torch: Any, logits: Any) -> Any:
    """A step's score: P(label 1) of a two-label head (softmax, as Qwen2.5-Math-PRM), or the
    sigmoid of a one-label head; computed in float32."""
    logits = logits.float()
    if logits.shape[-1] == 1:
        return torch.sigmoid(logits[..., 0])
    return torch.softmax(logits, dim=-1)[..., 1]


def _resolve_dtype(setting: str, device_type: str, checkpoint_dtype: str) -> str:
    if setting != "auto":
        return setting
    if device_type == "cpu":
        return "float32"
    return checkpoint_dtype if checkpoint_dtype in _DTYPES else "bfloat16"


def _is_causal(transformers: Any, model_type: str) -> bool:
    """A decoder-only language model (each token sees only those before it), by model type."""
    try:
        from transformers.models.auto import modeling_auto
    except ImportError:  # pragma: no cover - a transformers without the mappings
        return False
    causal = modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    masked = modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return model_type in causal and model_type not in masked


def _named_head(torch: Any, checkpoint: CheckpointInfo, hidden: int) -> Any:
    """The head AutoModel leaves out, read by name: OpenRLHF's bias-free Linear(hidden, 1), or
    Qwen2-PRM's Sequential(Linear(hidden, hidden), ReLU, Linear(hidden, labels))."""
    prefix = checkpoint.value_head_prefix
    if checkpoint.head == "qwen2_prm":
        first = torch.nn.Linear(hidden, hidden)
        last = torch.nn.Linear(hidden, checkpoint.num_labels)
        with torch.no_grad():
            for layer, index in ((first, 0), (last, 2)):
                layer.weight.copy_(_read_tensor(checkpoint.path, f"{prefix}.{index}.weight"))
                layer.bias.copy_(_read_tensor(checkpoint.path, f"{prefix}.{index}.bias"))
        return torch.nn.Sequential(first, torch.nn.ReLU(), last)
    head = torch.nn.Linear(hidden, 1, bias=False)
    weight = _read_tensor(checkpoint.path, f"{prefix}.weight")
    with torch.no_grad():
        head.weight.copy_(weight.reshape(1, -1))
    return head


def _check_loaded(info: dict[str, Any], path: str) -> None:
    missing = sorted(info.get("missing_keys") or [])
    if missing:  # randomly initialized weights would give plausible-looking garbage rewards
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise CheckpointError(f"{path}: weights missing from the checkpoint: {shown}")


def _read_tensor(root: Path, name: str) -> Any:
    """One tensor by name from safetensors (sharded or not) or a pytorch .bin checkpoint."""
    import json

    torch = require("torch")
    index_files = {
        "safetensors": root / "model.safetensors.index.json",
        "bin": root / "pytorch_model.bin.index.json",
    }
    for fmt, index in index_files.items():
        if index.is_file():
            weight_map = json.loads(index.read_text()).get("weight_map", {})
            if name not in weight_map:
                raise CheckpointError(_no_head(name, list(weight_map)))
            return _load_one(torch, root / weight_map[name], name, fmt)
    for fmt, file in (("safetensors", root / "model.safetensors"), ("bin", root / "pytorch_model.bin")):
        if file.is_file():
            return _load_one(torch, file, name, fmt)
    raise CheckpointError(f"{root}: no model.safetensors or pytorch_model.bin (nor their index)")


def _load_one(torch: Any, file: Path, name: str, fmt: str) -> Any:
    if fmt == "safetensors":
        safetensors = require("safetensors")
        with safetensors.safe_open(str(file), framework="pt") as handle:
            keys = list(handle.keys())
            if name not in keys:
                raise CheckpointError(_no_head(name, keys))
            return handle.get_tensor(name)
    state = torch.load(str(file), map_location="cpu", weights_only=True)
    if name not in state:
        raise CheckpointError(_no_head(name, list(state)))
    return state[name]


def _no_head(name: str, keys: list[str]) -> str:
    heads = [k for k in keys if k.count(".") == 1 and k.endswith(".weight")]
    return f"value head {name!r} not in the checkpoint (top-level weights: {heads}); set value_head_prefix"


@contextlib.contextmanager
def _quiet(transformers: Any) -> Iterator[None]:
    """Loading reports list the dropped value head as UNEXPECTED: expected here, so silenced."""
    logging_module = transformers.utils.logging
    previous = logging_module.get_verbosity()
    logging_module.set_verbosity_error()
    try:
        yield
    finally:
        logging_module.set_verbosity(previous)
