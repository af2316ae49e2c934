"""The transformers backend: the model in this process, CPU (fp32) by default, GPU capable.

Forward passes run in one dedicated thread, one at a time (a CPU forward already uses
every core; a GPU runs one stream), under `torch.inference_mode`. Each grader batch is
re-split by token budget, sorted by length and padded only within a sub-batch. The
reward is read as OpenRLHF does: position ids from the attention mask (so left padding
changes nothing), the value head at the last non-pad token.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Iterator, Sequence
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
        await self.start()
        model = self._model
        assert model is not None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), model.score_all, [list(ids) for ids in inputs])

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
        if settings.torch_threads:
            torch.set_num_threads(settings.torch_threads)
        device = torch.device(settings.device)
        dtype = getattr(torch, _resolve_dtype(settings.dtype, device.type, self.checkpoint.torch_dtype))
        major = int(transformers.__version__.split(".")[0])
        kwargs: dict[str, Any] = {"dtype" if major >= 5 else "torch_dtype": dtype}
        if settings.attn_implementation:
            kwargs["attn_implementation"] = settings.attn_implementation
        path = str(self.checkpoint.path)
        with _quiet(transformers):
            if self.checkpoint.kind == "openrlhf":
                base, info = transformers.AutoModel.from_pretrained(path, output_loading_info=True, **kwargs)
                _check_loaded(info, path)
                head = torch.nn.Linear(base.config.hidden_size, 1, bias=False)
                weight = _read_tensor(self.checkpoint.path, f"{self.checkpoint.value_head_prefix}.weight")
                with torch.no_grad():
                    head.weight.copy_(weight.reshape(1, -1))
                model = _LoadedModel(
                    torch, base.to(device), head.to(device=device, dtype=dtype), None, settings
                )
            else:
                full, info = transformers.AutoModelForSequenceClassification.from_pretrained(
                    path, output_loading_info=True, **kwargs
                )
                _check_loaded(info, path)
                full = full.to(device)
                head = getattr(full, self.checkpoint.value_head_prefix, None)
                base = getattr(full, full.base_model_prefix, None)
                if isinstance(head, torch.nn.Linear) and base is not None:
                    model = _LoadedModel(torch, base, head, None, settings)
                else:  # encoder classifiers (pooling on the first token): their own forward
                    model = _LoadedModel(torch, None, None, full, settings)
        log.info("reward model %s loaded on %s (%s)", path, device, dtype)
        return model


class _LoadedModel:
    def __init__(self, torch: Any, base: Any, head: Any, whole: Any, settings: RMServiceSettings) -> None:
        self.torch = torch
        self.base: Any = base.eval() if base is not None else None
        self.head: Any = head.eval() if head is not None else None
        self.whole: Any = whole.eval() if whole is not None else None
        self.settings = settings
        modules = [m for m in (self.base, self.whole) if m is not None]
        self.device = next(modules[0].parameters()).device
        # Encoder classifiers count positions from the first token: pad on the right only.
        self.padding_side = settings.padding_side if self.whole is None else "right"

    def score_all(self, inputs: list[list[int]]) -> list[float]:
        values = [0.0] * len(inputs)
        lengths = [len(ids) for ids in inputs]
        settings = self.settings
        plan = plan_batches(lengths, settings.token_budget, settings.max_forward_batch, settings.max_padding)
        for batch in plan:
            for index, value in zip(batch, self.forward([inputs[i] for i in batch]), strict=True):
                values[index] = value
        return values

    def forward(self, batch: list[list[int]]) -> list[float]:
        torch = self.torch
        width = max(len(ids) for ids in batch)
        input_ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, ids in enumerate(batch):
            span = slice(width - len(ids), width) if self.padding_side == "left" else slice(0, len(ids))
            input_ids[row, span] = torch.tensor(ids, dtype=torch.long)
            mask[row, span] = 1
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            if self.whole is not None:
                logits = self.whole(input_ids=input_ids, attention_mask=mask).logits
                return [float(v) for v in logits[:, 0].float().cpu().tolist()]
            positions = mask.cumsum(-1) - 1
            positions.masked_fill_(mask == 0, 1)
            out = self.base(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=False)
            hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
            # The last non-pad token of each row (OpenRLHF's eos_indices).
            last = width - 1 - mask.fliplr().argmax(dim=1)
            picked = hidden[torch.arange(len(batch), device=self.device), last]
            values = self.head(picked).squeeze(-1).float().cpu()
        return [float(v) for v in values.tolist()]  # a non-finite value fails its sample in the grader


def _resolve_dtype(setting: str, device_type: str, checkpoint_dtype: str) -> str:
    if setting != "auto":
        return setting
    if device_type == "cpu":
        return "float32"
    return checkpoint_dtype if checkpoint_dtype in _DTYPES else "bfloat16"


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
