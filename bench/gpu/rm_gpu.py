"""The reward model on a GPU, measured: the service beside the bare batched forward, one command.

On the lent H200 (`bash bench/gpu/run.sh` through the device tool, carry [".whl"], timeout 600 s;
the wheels that travel come from `bench/gpu/wheels.sh`, about 12 MiB):

1. the chip's bf16 matmul rate (8192^3 on random data, CUDA events): the MFU denominator;
2. a random-init reward model of Llama-3-8B's shape with OpenRLHF's value head, bf16, built on the
   GPU and saved as OpenRLHF's `train_rm` saves one (RewardModel config, `model.*` + `score.weight`
   in safetensors shards, a tokenizer trained in memory);
3. the bare batched forward of that model on the same token ids: sorted by length, the service's
   token-budget plan, right-padded, causal SDPA: the limit the service can reach;
4. `arbiter serve reward_rm` (transformers backend, cuda, bf16, sdpa) in its own process, driven as
   OpenRLHF drives it: each sample its own POST /get_reward (prompt 512 + response 1-2k tokens), the
   whole rollout at once, a new connection per request;
5. then, while the time allows: replicas of the service on the one GPU fed round-robin (OpenRLHF's
   several URLs), and a 2x deeper model (about 14B) through the same steps.

Prints one table (tokens/s, service / bare, MFU against 2 x non-embedding params x tokens and the
measured matmul rate, GPU memory and utilisation, p50/p99 latency) and where the service's time went
(tokenization, the forward thread, padding, batching waits, from its /metrics); the figures go to
`<out>/results.json`. Targets: service >= 0.85x bare, >= 40% MFU on the long inputs.

    python bench/gpu/rm_gpu.py --dry-run --out /tmp/rm-gpu   # the same steps on the CPU, tiny model
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testkit.openrlhf_client import Reply, post_one  # noqa: E402
from testkit.procs import ServiceProcess, free_port, percentile  # noqa: E402

PROMPT = "<s><|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
GIB = 1024**3


@dataclass(frozen=True)
class Profile:
    name: str
    device: str
    dtype: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int  # the model's (Llama-3: 128256); the tokenizer's own ids are a subset
    requests: int
    prompt_tokens: int
    response_tokens: tuple[int, int]
    matmul_n: int
    tokenizer_vocab: int
    budget_s: float  # wall time for the whole run; optional phases are skipped past it
    start_timeout_s: float


# Llama-3-8B: hidden 4096, 32 layers, 32 heads (8 KV), MLP 14336, vocab 128256, rope theta 5e5.
GPU = Profile(
    "llama3-8b",
    "cuda",
    "bfloat16",
    4096,
    32,
    32,
    8,
    14336,
    128256,
    256,
    512,
    (1024, 2048),
    8192,
    4000,
    540,
    300,
)
DRY = Profile("tiny", "cpu", "float32", 64, 2, 1, 1, 160, 0, 12, 24, (16, 48), 256, 400, 400, 240)


# -- the chip --------------------------------------------------------------------------------


def matmul_rate(torch: Any, profile: Profile) -> float:
    """FLOP/s of one large matrix product in the profile's dtype, on random data (median of 10)."""
    n, device = profile.matmul_n, torch.device(profile.device)
    dtype = getattr(torch, profile.dtype)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        started = _sync_clock(torch, device)
        a @ b
        times.append(_sync_clock(torch, device) - started)
    return 2 * n**3 / sorted(times)[len(times) // 2]


def _sync_clock(torch: Any, device: Any) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


class GPUSampler:
    """nvidia-smi every 200 ms while a phase runs: peak memory used, mean utilisation."""

    def __init__(self) -> None:
        self.memory: list[float] = []
        self.util: list[float] = []
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GPUSampler:
        if shutil.which("nvidia-smi"):
            query = [
                "--query-gpu=utilization.gpu,memory.used",
                "--format=csv,noheader,nounits",
                "-lms",
                "200",
            ]
            self._proc = subprocess.Popen(["nvidia-smi", *query], stdout=subprocess.PIPE, text=True)
            self._thread = threading.Thread(target=self._read, daemon=True)
            self._thread.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            with contextlib.suppress(ValueError):
                util, memory = (float(x) for x in line.split(",")[:2])
                self.util.append(util)
                self.memory.append(memory / 1024)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()

    def figures(self) -> dict[str, float | None]:
        return {
            "gpu_memory_peak_gib": max(self.memory) if self.memory else None,
            "gpu_util_mean_pct": sum(self.util) / len(self.util) if self.util else None,
        }


# -- the model -------------------------------------------------------------------------------


@dataclass
class Built:
    path: Path
    params: int  # all parameters
    params_non_embedding: int
    seconds_build: float
    seconds_save: float


def build_model(
    torch: Any, profile: Profile, tokenizer: Any, layers: int, root: Path
) -> tuple[Built, Any, Any]:
    """A random-init Llama RM on the device, saved in OpenRLHF's layout; the live modules too."""
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaModel

    started = time.perf_counter()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=max(profile.vocab, len(tokenizer)),
        hidden_size=profile.hidden,
        intermediate_size=profile.intermediate,
        num_hidden_layers=layers,
        num_attention_heads=profile.heads,
        num_key_value_heads=profile.kv_heads,
        max_position_embeddings=8192,
        rope_theta=500000.0,
        initializer_range=0.02,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    dtype = getattr(torch, profile.dtype)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # initialised in place in the serving dtype, on the device
    try:
        with torch.device(profile.device):
            base = LlamaModel(config).eval()
            head = torch.nn.Linear(profile.hidden, 1, bias=False)
            torch.nn.init.normal_(head.weight, std=profile.hidden**-0.5)
    finally:
        torch.set_default_dtype(previous)
    _sync_clock(torch, torch.device(profile.device))
    built_s = time.perf_counter() - started

    started = time.perf_counter()
    path = root / f"rm-{layers}l"
    path.mkdir(parents=True, exist_ok=True)
    state = {f"model.{k}": v for k, v in base.state_dict().items()}
    state["score.weight"] = head.weight
    shards: list[dict[str, Any]] = [{}]
    size = 0
    for name, tensor in state.items():
        nbytes = tensor.numel() * tensor.element_size()
        if shards[-1] and size + nbytes > 4 * GIB:
            shards.append({})
            size = 0
        shards[-1][name] = tensor.detach().contiguous()
        size += nbytes
    weight_map = {}
    for index, shard in enumerate(shards, start=1):
        file = f"model-{index:05d}-of-{len(shards):05d}.safetensors"
        on_host = {name: tensor.to("cpu") for name, tensor in shard.items()}  # one shard in RAM at a time
        save_file(on_host, str(path / file), metadata={"format": "pt"})
        del on_host
        weight_map.update(dict.fromkeys(shard, file))
    total = sum(t.numel() * t.element_size() for t in state.values())
    index_json = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / "model.safetensors.index.json").write_text(json.dumps(index_json))
    data = config.to_dict()
    data.update(
        architectures=["RewardModel"],
        value_head_prefix="score",
        normalize_reward=False,
        mean=0.0,
        std=1.0,
        torch_dtype=profile.dtype,
    )
    (path / "config.json").write_text(json.dumps(data, indent=1))
    tokenizer.save_pretrained(str(path))
    saved_s = time.perf_counter() - started
    params = sum(p.numel() for p in base.parameters()) + head.weight.numel()
    embedding = base.embed_tokens.weight.numel()
    return Built(path, params, params - embedding, built_s, saved_s), base, head


def make_queries(tokenizer: Any, profile: Profile, seed: int = 0) -> list[tuple[str, str]]:
    """(prompt, query) pairs of OpenRLHF's shape: a templated prompt of about `prompt_tokens`, a
    response of a length drawn from `response_tokens`, the EOS of a stopped rollout."""
    from testkit.tiny_checkpoints import sentence

    rng = random.Random(seed)
    low, high = profile.response_tokens
    need = profile.requests * (profile.prompt_tokens + high) + 10_000
    corpus = sentence(rng, need)  # about one token per word with this tokenizer; sliced by tokens
    ids = tokenizer(corpus, add_special_tokens=False)["input_ids"]
    pairs = []
    at = 0
    for _ in range(profile.requests):
        body = profile.prompt_tokens - 12  # the template's own tokens
        answer = rng.randint(low, high)
        if at + body + answer > len(ids):
            at = 0
        question = tokenizer.decode(ids[at : at + body]).strip()
        response = tokenizer.decode(ids[at + body : at + body + answer]).strip()
        at += body + answer
        prompt = PROMPT.format(q=question)
        pairs.append((prompt, prompt + response + "</s>"))
    return pairs


def bare_forward(
    torch: Any,
    base: Any,
    head: Any,
    ids: list[list[int]],
    budget: int,
    max_batch: int,
    max_padding: float,
    masked: bool = False,
) -> dict[str, Any]:
    """The limit: the same ids, the service's batching plan, one loop, no server; rewards too.

    `masked`: with an attention mask, as before the service ran right-padded causal models
    unmasked (what the fused causal kernels buy)."""
    from services.reward_rm.backends.batching import plan_batches

    device = next(base.parameters()).device
    lengths = [len(x) for x in ids]
    plan = plan_batches(lengths, budget, max_batch, max_padding)

    def run(batches: Sequence[list[int]]) -> tuple[list[tuple[list[int], Any]], float]:
        started = _sync_clock(torch, device)
        outs = []
        with torch.inference_mode():
            for batch in batches:
                width = max(lengths[i] for i in batch)
                rows = torch.zeros((len(batch), width), dtype=torch.long)
                for row, index in enumerate(batch):
                    rows[row, : lengths[index]] = torch.tensor(ids[index])
                kwargs: dict[str, Any] = {"use_cache": False}
                if masked:
                    mask = (
                        torch.arange(width)[None, :] < torch.tensor([lengths[i] for i in batch])[:, None]
                    ).long()
                    kwargs["attention_mask"] = mask.to(device)
                if device.type == "cuda":
                    rows = rows.pin_memory().to(device, non_blocking=True)
                hidden = base(input_ids=rows.to(device), **kwargs).last_hidden_state
                last = torch.tensor([lengths[i] - 1 for i in batch], device=device)
                outs.append((batch, head(hidden[torch.arange(len(batch), device=device), last]).squeeze(-1)))
        return outs, _sync_clock(torch, device) - started

    run(plan[:2])  # warm-up: kernels picked, workspaces allocated
    outs, seconds = run(plan)
    rewards = [0.0] * len(ids)
    for batch, values in outs:
        for index, value in zip(batch, values.float().cpu().tolist(), strict=True):
            rewards[index] = value
    padded = sum(len(b) * max(lengths[i] for i in b) for b in plan)
    return {
        "seconds": seconds,
        "tokens": sum(lengths),
        "padded_tokens": padded,
        "forwards": len(plan),
        "rewards": rewards,
    }


# -- the service -----------------------------------------------------------------------------


@contextlib.contextmanager
def services(
    profile: Profile, checkpoint: Path, replicas: int, log_dir: Path, args: Any
) -> Iterator[list[str]]:
    """`arbiter serve reward_rm` processes (one per replica) on the checkpoint; their base URLs."""
    procs: list[ServiceProcess] = []
    try:
        for n in range(replicas):
            port = free_port()
            env = {
                **os.environ,
                "ARBITER_REWARD_RM__CHECKPOINT": str(checkpoint),
                "ARBITER_REWARD_RM__DEVICE": profile.device,
                "ARBITER_REWARD_RM__DTYPE": profile.dtype,
                "ARBITER_REWARD_RM__HTTP_PORT": str(port),
                "ARBITER_REWARD_RM__GRPC_PORT": "-1",
                "ARBITER_REWARD_RM__HOST": "127.0.0.1",
                "ARBITER_CACHE__BACKEND": "none",  # every sample is graded
                "ARBITER_LOG__LEVEL": "WARNING",
            }
            if profile.device == "cuda":
                env["ARBITER_REWARD_RM__ATTN_IMPLEMENTATION"] = args.attn
            if args.token_budget:
                env["ARBITER_REWARD_RM__TOKEN_BUDGET"] = str(args.token_budget)
            if args.threads:
                env["ARBITER_REWARD_RM__TORCH_THREADS"] = str(args.threads)
            log = (log_dir / f"service-{checkpoint.name}-{replicas}x{n}.log").open("w")
            argv = [sys.executable, "-m", "services.cli", "serve", "reward_rm"]
            procs.append(
                ServiceProcess(
                    argv,
                    f"http://127.0.0.1:{port}/readyz",
                    env=env,
                    start_timeout_s=profile.start_timeout_s,
                    stop_signal=signal.SIGINT,
                    output=log,
                )
            )
        with concurrent.futures.ThreadPoolExecutor(len(procs)) as pool:  # replicas load side by side
            for future in [pool.submit(proc.start) for proc in procs]:
                future.result()
        yield [p.ready_url.removesuffix("/readyz") for p in procs]
    finally:
        for proc in procs:
            if proc.proc is not None:
                proc.stop()


async def burst(urls: Sequence[str], pairs: Sequence[tuple[str, str]]) -> tuple[list[Reply], float]:
    """Every sample its own POST, all at once, round-robin over the URLs (as OpenRLHF's rollout)."""
    bodies = [{"query": [query], "prompts": [prompt], "labels": [""]} for prompt, query in pairs]
    started = time.perf_counter()
    replies = await asyncio.gather(
        *(post_one(f"{urls[i % len(urls)]}/get_reward", body) for i, body in enumerate(bodies))
    )
    return list(replies), time.perf_counter() - started


def scrape(url: str) -> dict[str, float]:
    """The unlabelled samples of a /metrics page (counters, histogram sums and counts)."""
    import httpx

    values: dict[str, float] = {}
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, _, value = line.rpartition(" ")
            with contextlib.suppress(ValueError):
                values[name] = float(value)
    return values


def serve_and_drive(
    profile: Profile, checkpoint: Path, pairs: list[tuple[str, str]], replicas: int, out: Path, args: Any
) -> dict[str, Any]:
    started = time.perf_counter()
    with services(profile, checkpoint, replicas, out, args) as urls:
        ready_s = time.perf_counter() - started
        warm = pairs[: max(2, len(pairs) // 16)]
        asyncio.run(burst(urls, warm))  # first forwards: kernels, allocator, cuBLAS workspaces
        before = [scrape(u) for u in urls]
        with GPUSampler() as sampler:
            replies, wall = asyncio.run(burst(urls, pairs))
        after = [scrape(u) for u in urls]
    delta: dict[str, float] = {}
    for b, a in zip(before, after, strict=True):
        for name, value in a.items():
            delta[name] = delta.get(name, 0.0) + value - b.get(name, 0.0)
    latencies = [r.latency_s for r in replies if r.ok]
    rewards = [float(r.data["rewards"][0]) if r.ok and r.data else None for r in replies]
    statuses = sum(1 for r in replies if r.ok and r.data and r.data["extra_logs"].get("status/ok") != [1.0])
    return {
        "replicas": replicas,
        "ready_s": ready_s,
        "wall_s": wall,
        "errors": sum(not r.ok for r in replies),
        "not_ok_status": statuses,
        "p50_s": percentile(latencies, 0.5),
        "p99_s": percentile(latencies, 0.99),
        "rewards": rewards,
        "metrics": delta,
        **sampler.figures(),
    }


def where_time_went(service: dict[str, Any]) -> dict[str, float]:
    m, wall = service["metrics"], service["wall_s"]
    real = m.get("arbiter_rm_real_tokens_total", 0.0)
    padded = m.get("arbiter_rm_padded_tokens_total", 0.0)
    waits, waited = (
        m.get("arbiter_queue_wait_seconds_sum", 0.0),
        m.get("arbiter_queue_wait_seconds_count", 0.0),
    )
    batches = m.get("arbiter_batch_size_count", 0.0)
    replicas = service["replicas"]
    return {
        "forward_busy_share": m.get("arbiter_rm_forward_seconds_total", 0.0) / (wall * replicas),
        "tokenize_share": m.get("arbiter_rm_tokenize_seconds_total", 0.0) / (wall * replicas),
        "padding_share": 1 - real / padded if padded else 0.0,
        "forwards": m.get("arbiter_rm_forwards_total", 0.0),
        "batches": batches,
        "mean_batch": m.get("arbiter_batch_size_sum", 0.0) / batches if batches else 0.0,
        "mean_queue_wait_s": waits / waited if waited else 0.0,
        "service_real_tokens": real,
    }


# -- the run ---------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="CPU, a tiny model: the same steps, to test them"
    )
    parser.add_argument("--out", default=os.environ.get("OUT") or "bench-gpu-out")
    parser.add_argument("--requests", type=int, default=0, help="samples per burst (default: the profile's)")
    parser.add_argument("--replicas", type=int, default=2, help="service processes on the one GPU (phase 5)")
    parser.add_argument("--larger", type=int, default=2, help="depth factor of the larger model; 0: none")
    parser.add_argument(
        "--token-budget", type=int, default=0, help="the service's and the bare plan's; 0: default"
    )
    parser.add_argument(
        "--attn", default="sdpa", help="attn_implementation on the GPU (sdpa, flash_attention_2)"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (services, bare); 0: torch's")
    parser.add_argument(
        "--compare-mask",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the bare forward with an attention mask (the service's old path)",
    )
    parser.add_argument(
        "--budget-s", type=float, default=0.0, help="wall seconds for the run; 0: the profile's"
    )
    args = parser.parse_args()

    profile = DRY if args.dry_run else GPU
    if args.requests:
        profile = replace(profile, requests=args.requests)
    if args.budget_s:
        profile = replace(profile, budget_s=args.budget_s)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch
    import transformers

    from services.reward_rm.settings import RMServiceSettings
    from testkit.tiny_checkpoints import build_tokenizer

    if args.threads:
        torch.set_num_threads(args.threads)
    defaults = RMServiceSettings()
    budget = args.token_budget or defaults.token_budget
    device = torch.device(profile.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: run with --dry-run on a CPU machine", file=sys.stderr)
        return 2
    env = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu x{os.cpu_count()}",
        "profile": asdict(profile),
        "token_budget": budget,
    }
    print(f"[rm-gpu] {json.dumps({k: v for k, v in env.items() if k != 'profile'})}", flush=True)
    results: dict[str, Any] = {"env": env, "phases": [], "skipped": []}

    peak = matmul_rate(torch, profile)
    results["matmul_flops"] = peak
    print(f"[rm-gpu] {profile.dtype} matmul {profile.matmul_n}^3: {peak / 1e12:.1f} TFLOP/s", flush=True)

    tokenizer: Any = build_tokenizer(profile.tokenizer_vocab)
    pairs = make_queries(tokenizer, profile)
    tok_started = time.perf_counter()
    ids = [list(x) for x in tokenizer([q for _, q in pairs], add_special_tokens=False)["input_ids"]]
    tokenize_s = time.perf_counter() - tok_started
    lengths = sorted(len(x) for x in ids)
    print(
        f"[rm-gpu] {len(ids)} samples, tokens min/median/max {lengths[0]}/{lengths[len(lengths) // 2]}/"
        f"{lengths[-1]}, total {sum(lengths)}; tokenized in {tokenize_s:.2f} s (one batch call)",
        flush=True,
    )
    results["inputs"] = {"samples": len(ids), "tokens": sum(lengths), "tokenize_s": tokenize_s}

    root = Path(tempfile.mkdtemp(prefix="rm-gpu-", dir=_scratch(profile)))
    first_phase_s = 0.0
    try:
        depths = [profile.layers] + ([profile.layers * args.larger] if args.larger > 1 else [])
        for depth in depths:
            left = profile.budget_s - (time.perf_counter() - started)
            need = first_phase_s * depth / profile.layers * 1.1
            if depth != profile.layers and left < need:
                results["skipped"].append(f"{depth} layers: needs ~{need:.0f} s, {left:.0f} s left")
                print(
                    f"[rm-gpu] skipped the {depth}-layer model: needs ~{need:.0f} s, {left:.0f} s left",
                    flush=True,
                )
                continue
            phase_started = time.perf_counter()
            built, base, head = build_model(torch, profile, tokenizer, depth, root)
            print(
                f"[rm-gpu] {depth} layers: {built.params / 1e9:.2f} B params "
                f"({built.params_non_embedding / 1e9:.2f} B non-embedding), "
                f"built {built.seconds_build:.1f} s, saved {built.seconds_save:.1f} s",
                flush=True,
            )
            bare = bare_forward(
                torch, base, head, ids, budget, defaults.max_forward_batch, defaults.max_padding
            )
            if device.type == "cuda":
                bare["gpu_memory_peak_gib"] = torch.cuda.max_memory_allocated(device) / GIB
            rows = [("bare forward", bare["seconds"], bare)]
            if depth == profile.layers and args.compare_mask:
                masked = bare_forward(
                    torch,
                    base,
                    head,
                    ids,
                    budget,
                    defaults.max_forward_batch,
                    defaults.max_padding,
                    masked=True,
                )
                rows.append(("bare, masked", masked["seconds"], masked))
            del base, head
            if device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
            flops = 2 * built.params_non_embedding
            label = f"{depth}L {built.params / 1e9:.1f}B" if device.type == "cuda" else f"{depth}L tiny"
            finite = sum(1 for r in bare["rewards"] if r == r and abs(r) != float("inf"))
            print(
                f"[rm-gpu] bare forward: {bare['tokens'] / bare['seconds']:.0f} tokens/s, "
                f"{finite}/{len(ids)} finite rewards",
                flush=True,
            )
            service = serve_and_drive(profile, built.path, pairs, 1, out, args)
            rows.append(("service", service["wall_s"], service))
            if depth == profile.layers:
                first_phase_s = time.perf_counter() - phase_started
                left = profile.budget_s - (time.perf_counter() - started)
                need = service["ready_s"] * args.replicas + service["wall_s"] * 1.5
                if args.replicas > 1 and left > need + first_phase_s * (args.larger > 1):
                    replicated = serve_and_drive(profile, built.path, pairs, args.replicas, out, args)
                    rows.append((f"replicas x{args.replicas}", replicated["wall_s"], replicated))
                elif args.replicas > 1:
                    results["skipped"].append(f"replicas: needs ~{need:.0f} s, {left:.0f} s left")
            bare_rate = bare["tokens"] / bare["seconds"]
            for name, seconds, figures in rows:
                rate = bare["tokens"] / seconds
                phase = {
                    "model": label,
                    "phase": name,
                    "params": built.params,
                    "params_non_embedding": built.params_non_embedding,
                    "tokens": bare["tokens"],
                    "seconds": seconds,
                    "tokens_per_s": rate,
                    "vs_bare": rate / bare_rate,
                    "mfu": flops * rate / peak,
                    **{k: v for k, v in figures.items() if k not in ("rewards", "metrics")},
                }
                if name.startswith("bare"):
                    phase["padding_share"] = 1 - figures["tokens"] / figures["padded_tokens"]
                else:
                    phase["where"] = where_time_went(figures)
                    pairs_done = [
                        abs(a - b)
                        for a, b in zip(figures["rewards"], bare["rewards"], strict=True)
                        if a is not None
                    ]
                    phase["max_reward_diff_vs_bare"] = max(pairs_done) if pairs_done else None
                results["phases"].append(phase)
            shutil.rmtree(built.path, ignore_errors=True)  # room on the disk for the next one
    finally:
        shutil.rmtree(root, ignore_errors=True)
        results["wall_s"] = time.perf_counter() - started
        (out / "results.json").write_text(json.dumps(results, indent=1))
        report(results)
    return 0


def _scratch(profile: Profile) -> str | None:
    """RAM-backed /dev/shm when the checkpoints fit there (saving 16 GB to disk costs minutes)."""
    if profile.device != "cuda":
        return None
    with contextlib.suppress(OSError):
        if shutil.disk_usage("/dev/shm").free > 40 * GIB:
            return "/dev/shm"
    return None


def report(results: dict[str, Any]) -> None:
    def num(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    print()
    print(
        f"{'model':<12} {'phase':<13} {'tokens/s':>10} {'vs bare':>8} {'MFU':>6} {'p50 s':>7} "
        f"{'p99 s':>7} {'GPU GiB':>8} {'util %':>7} {'errors':>6}"
    )
    for p in results["phases"]:
        print(
            f"{p['model']:<12} {p['phase']:<13} {p['tokens_per_s']:>10.0f} {p['vs_bare']:>8.2f} "
            f"{p['mfu'] * 100:>5.1f}% {num(p.get('p50_s'), '.2f'):>7} {num(p.get('p99_s'), '.2f'):>7} "
            f"{num(p.get('gpu_memory_peak_gib'), '.1f'):>8} {num(p.get('gpu_util_mean_pct'), '.0f'):>7} "
            f"{p.get('errors', 0) + p.get('not_ok_status', 0):>6}"
        )
    for p in results["phases"]:
        if "where" in p:
            w = p["where"]
            print(
                f"{p['model']} {p['phase']}: forward thread busy "
                f"{w['forward_busy_share'] * 100:.0f}% of the wall, "
                f"tokenization {w['tokenize_share'] * 100:.0f}% (overlaps the forwards), padding "
                f"{w['padding_share'] * 100:.1f}% of computed tokens, {w['batches']:.0f} batches of "
                f"{w['mean_batch']:.1f} in {w['forwards']:.0f} forwards, mean queue wait "
                f"{w['mean_queue_wait_s'] * 1000:.0f} ms, ready in {p['ready_s']:.0f} s, rewards vs bare max "
                f"|diff| {num(p.get('max_reward_diff_vs_bare'), '.3g')}"
            )
        elif "padding_share" in p:
            print(f"{p['model']} {p['phase']}: padding {p['padding_share'] * 100:.1f}% of computed tokens")
    for line in results["skipped"]:
        print(f"skipped: {line}")
    print(
        f"matmul {results['matmul_flops'] / 1e12:.1f} TFLOP/s; MFU = 2 x non-embedding params x real "
        f"tokens / time / that rate; targets: service >= 0.85x bare, >= 40% MFU; "
        f"wall {results['wall_s']:.0f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
