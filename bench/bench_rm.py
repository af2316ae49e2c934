"""The reward_rm service under OpenRLHF's load shape, beside its peers, in one run.

OpenRLHF (>= 0.9.1) POSTs one sample per request, hundreds at once (aiohttp, a new session
per request). Peers, each in its own process, on the same tiny-but-not-trivial checkpoint
built locally (OpenRLHF RewardModel format, random init; the forward pass dominates):

- service: `python -m services.reward_rm` as shipped: the kit's micro-batcher, the
  transformers backend (token-budget batches sorted by length, fp32, inference mode);
- serial:  OpenRLHF's `serve_rm.py` shape: a FastAPI handler that tokenizes and runs the
  model synchronously for each request, one at a time;
- raw:     the limit: the same samples, tokenized, sorted by length and run in token-budget
  batches in one loop, no server, no HTTP.

    python bench/bench_rm.py                      # 256 clients, 1200 requests, hidden 384 x 4 layers
    python bench/bench_rm.py --clients 64 --requests 600 --hidden 256
    # a GPU machine: a ~1B RM served by vLLM (python -m services.reward_rm.launch /models/rm-1b --start)
    python bench/bench_rm.py --model /models/rm-1b --device cuda --dtype bfloat16 --threads 0 \
        --vllm-url http://127.0.0.1:8000 --requests 4000 --clients 512

Prints samples/s per peer and the ratios; targets: service >= 5x serial, >= 0.85x raw.
Also checks the service and the serial server agree on every reward (max |diff|).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Module level: FastAPI resolves the handler's annotations against these globals.
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.openrlhf_client import post_all  # noqa: E402
from testkit.procs import ServiceProcess, free_port  # noqa: E402

PROMPT = "<s><|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def make_queries(count: int, min_words: int, max_words: int, seed: int = 0) -> list[tuple[str, str]]:
    """(prompt, query) pairs; queries end with EOS as a stopped rollout's do. Mixed lengths."""
    from testkit.tiny_checkpoints import sentence

    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        prompt = PROMPT.format(q=sentence(rng, rng.randint(3, 20)))
        # Skewed like rollouts: many short answers, a tail of long ones.
        words = min_words + int((max_words - min_words) * rng.random() ** 2)
        pairs.append((prompt, prompt + sentence(rng, words) + "</s>"))
    return pairs


# -- the peers (each runs in its own process) ----------------------------------------------


def serve_service(checkpoint: str, port: int, token_budget: int) -> None:
    overrides = json.loads(os.environ.get("BENCH_RM_SERVICE", "{}"))  # device, dtype, backend
    from services.common.settings import CacheSettings
    from services.reward_rm.build import build_grader
    from services.reward_rm.settings import RMServiceSettings
    from services.transports.server import GraderServer, run_until_signalled

    settings = RMServiceSettings(
        host="127.0.0.1", http_port=port, grpc_port=-1, checkpoint=checkpoint, token_budget=token_budget
    )
    settings = RMServiceSettings.model_validate({**settings.model_dump(), **overrides})
    # No cache: every request is graded, as by the serial server.
    server = GraderServer("reward_rm", build_grader(settings), settings, CacheSettings(backend="none"))
    try:
        import uvloop

        uvloop.run(run_until_signalled([server]))
    except ImportError:
        asyncio.run(run_until_signalled([server]))


def load_reference_model(checkpoint: str) -> tuple[Any, Any, float, float]:
    """OpenRLHF's RewardModel forward is HF's seq-cls forward on these weights, then (r - mean) / std."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    config = json.loads((Path(checkpoint) / "config.json").read_text())
    dtype = getattr(torch, os.environ.get("BENCH_RM_DTYPE", "float32"))
    device = os.environ.get("BENCH_RM_DEVICE", "cpu")
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=1, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    if config.get("normalize_reward"):
        mean, std = float(config.get("mean", 0.0)), float(config.get("std", 1.0))
    else:
        mean, std = 0.0, 1.0
    return model.to(device).eval(), tokenizer, mean, std


def serve_serial(checkpoint: str, port: int, token_budget: int) -> None:
    """serve_rm.py's shape: tokenize and forward synchronously inside the async handler."""
    import torch
    import uvicorn

    model, tokenizer, mean, std = load_reference_model(checkpoint)
    tokenizer.padding_side = "left"  # as serve_rm.py
    app = FastAPI()

    @app.post("/get_reward")
    async def get_reward(request: Request) -> JSONResponse:
        data = await request.json()
        with torch.no_grad():
            inputs = tokenizer(
                data["query"],
                return_tensors="pt",
                add_special_tokens=False,
                max_length=4096,
                padding=True,
                truncation=True,
            ).to(model.device)
            rewards = ((model(**inputs).logits[:, 0].float() - mean) / std).tolist()
        return JSONResponse({"rewards": rewards, "scores": rewards, "extra_logs": {"dummy_scores": rewards}})

    @app.get("/readyz")
    async def ready() -> dict[str, str]:
        return {"status": "ready"}

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http="httptools", backlog=4096)


def run_raw(checkpoint: str, queries: list[str], token_budget: int) -> dict[str, float]:
    """The limit: tokenize, sort by length, token-budget batches, forward; one loop, no server."""
    import torch

    from services.reward_rm.backends.batching import plan_batches

    model, tokenizer, mean, std = load_reference_model(checkpoint)
    pad = tokenizer.pad_token_id

    def once() -> float:
        started = time.perf_counter()
        ids = tokenizer(queries, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            for batch in plan_batches([len(x) for x in ids], token_budget, 64, max_padding=0.1):
                width = max(len(ids[i]) for i in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, index in enumerate(batch):
                    input_ids[row, : len(ids[index])] = torch.tensor(ids[index])
                    mask[row, : len(ids[index])] = 1
                input_ids, mask = input_ids.to(model.device), mask.to(model.device)
                ((model(input_ids=input_ids, attention_mask=mask).logits[:, 0].float() - mean) / std).tolist()
        return time.perf_counter() - started

    once()  # warm-up
    elapsed = once()
    return {"sps": len(queries) / elapsed, "seconds": elapsed}


# -- the load -----------------------------------------------------------------------------


PEER_ENV: dict[str, str] = {}  # device, dtype and service overrides, set by main for every peer


def peer_env(threads: int) -> dict[str, str]:
    """Every peer gets the same intra-op threads (0: torch's default, one per core)."""
    env = {**os.environ, **PEER_ENV}
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def rm_server(kind: str, checkpoint: str, port: int, token_budget: int, threads: int) -> ServiceProcess:
    argv = [sys.executable, __file__, "--serve", kind, "--checkpoint", checkpoint, "--port", str(port)]
    return ServiceProcess(
        [*argv, "--token-budget", str(token_budget)],
        f"http://127.0.0.1:{port}/readyz",
        env=peer_env(threads),
        start_timeout_s=120,
        stop_signal=signal.SIGINT,
    )


async def drive(url: str, pairs: list[tuple[str, str]], clients: int) -> dict[str, Any]:
    """`clients` concurrent loops, one sample per POST, a new session per request (as OpenRLHF)."""
    bodies = [{"query": [query], "prompts": [prompt], "labels": [""]} for prompt, query in pairs]
    replies, elapsed = await post_all(url, bodies, clients)
    rewards = [float(r.data["rewards"][0]) if r.ok and r.data else None for r in replies]
    errors = sum(not r.ok for r in replies)
    return {"sps": len(pairs) / elapsed, "seconds": elapsed, "errors": errors, "rewards": rewards}


def run_server_peer(kind: str, checkpoint: str, pairs: list[tuple[str, str]], args: Any) -> dict[str, Any]:
    port = free_port()
    with rm_server(kind, checkpoint, port, args.token_budget, args.threads):
        url = f"http://127.0.0.1:{port}/get_reward"
        asyncio.run(drive(url, pairs[: min(200, len(pairs))], min(args.clients, 64)))  # warm-up
        return asyncio.run(drive(url, pairs, args.clients))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=256)
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--min-words", type=int, default=4)
    parser.add_argument("--max-words", type=int, default=160)
    parser.add_argument("--token-budget", type=int, default=16_384)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; best of each peer counts")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of every peer (0: one per core); 1 leaves a core "
        "to the HTTP side and the clients, which share this machine",
    )
    parser.add_argument("--model", default="", help="an existing RM checkpoint instead of the tiny one")
    parser.add_argument("--device", default="cpu", help="torch device of every peer (cuda on a GPU machine)")
    parser.add_argument("--dtype", default="float32", help="torch dtype of every peer (bfloat16 on GPU)")
    parser.add_argument(
        "--vllm-url", default="", help="service on its vllm backend, this server (see launch)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object as well")
    parser.add_argument("--serve", choices=["service", "serial"], help=argparse.SUPPRESS)
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve:
        (serve_service if args.serve == "service" else serve_serial)(
            args.checkpoint, args.port, args.token_budget
        )
        return
    if args.raw:
        pairs = make_queries(args.requests, args.min_words, args.max_words)
        print(json.dumps(run_raw(args.checkpoint, [q for _, q in pairs], args.token_budget)))
        return

    from testkit.tiny_checkpoints import build

    overrides: dict[str, Any] = {"device": args.device, "dtype": args.dtype}
    if args.vllm_url:
        overrides.update(backend="vllm", vllm={"url": args.vllm_url})
    PEER_ENV.update(
        BENCH_RM_DEVICE=args.device, BENCH_RM_DTYPE=args.dtype, BENCH_RM_SERVICE=json.dumps(overrides)
    )
    with tempfile.TemporaryDirectory() as tmp:
        heads = max(1, args.hidden // 64)
        checkpoint = args.model or str(
            build(Path(tmp), hidden=args.hidden, layers=args.layers, heads=heads, kv_heads=heads).openrlhf
        )
        pairs = make_queries(args.requests, args.min_words, args.max_words)
        lengths = sorted(len(q) for _, q in pairs)
        model = args.model or f"tiny, hidden {args.hidden}, {args.layers} layers"
        backend = f"vllm at {args.vllm_url}" if args.vllm_url else "transformers"
        print(
            f"reward model: {model}; {args.dtype} on {args.device}; service backend {backend}; "
            f"{os.cpu_count()} CPU cores, torch threads {args.threads or 'default'}; "
            f"{args.requests} one-sample POSTs from {args.clients} concurrent clients; "
            f"query chars min/median/max {lengths[0]}/{lengths[len(lengths) // 2]}/{lengths[-1]}"
        )
        raws: list[dict[str, Any]] = []
        serials: list[dict[str, Any]] = []
        services: list[dict[str, Any]] = []
        for _ in range(args.rounds):  # interleaved rounds; the best of each peer is reported
            raw_run = subprocess.run(
                [
                    *(sys.executable, __file__, "--raw", "--checkpoint", checkpoint),
                    *("--requests", str(args.requests), "--token-budget", str(args.token_budget)),
                    *("--min-words", str(args.min_words), "--max-words", str(args.max_words)),
                ],
                capture_output=True,
                text=True,
                check=True,
                env=peer_env(args.threads),
            )
            raws.append(json.loads(raw_run.stdout.strip().splitlines()[-1]))
            serials.append(run_server_peer("serial", checkpoint, pairs, args))
            services.append(run_server_peer("service", checkpoint, pairs, args))
        raw, serial, service = (max(runs, key=lambda r: r["sps"]) for runs in (raws, serials, services))

    diffs = [
        abs(a - b)
        for a, b in zip(service["rewards"], serial["rewards"], strict=True)
        if a is not None and b is not None
    ]
    print(f"{'peer':<8} {'samples/s':>10} {'seconds':>8} {'errors':>7}   all rounds (samples/s)")
    for name, result, runs in (
        ("service", service, services),
        ("serial", serial, serials),
        ("raw", raw, raws),
    ):
        every = " ".join(f"{r['sps']:.1f}" for r in runs)
        errors = sum(int(r.get("errors", 0)) for r in runs)
        print(f"{name:<8} {result['sps']:>10.1f} {result['seconds']:>8.2f} {errors:>7}   {every}")
    vs_serial, vs_raw = service["sps"] / serial["sps"], service["sps"] / raw["sps"]
    print(
        f"service / serial = {vs_serial:.2f}x (target >= 5x)   "
        f"service / raw = {vs_raw:.2f}x (target >= 0.85x)"
    )
    print(
        f"rewards: service vs serial max |diff| = {max(diffs) if diffs else float('nan'):.2e} "
        f"over {len(diffs)} samples"
    )
    if args.json:
        print(
            json.dumps(
                {
                    "service_sps": service["sps"],
                    "serial_sps": serial["sps"],
                    "raw_sps": raw["sps"],
                    "service_over_serial": vs_serial,
                    "service_over_raw": vs_raw,
                    "max_reward_diff": max(diffs) if diffs else None,
                }
            )
        )


if __name__ == "__main__":
    main()
