#!/usr/bin/env bash
# ProRL-v2-style prolonged RL: REINFORCE++ baseline, dynamic filtering on Arbiter's `scores`,
# asymmetric clipping, token-level loss, 16 samples per prompt, a small KL.
# 1. trainer/recipes/start_reward_services.sh trainer/recipes/configs/mixed.yaml
# 2. this script, on the Ray head node.
set -euo pipefail
MODEL="${MODEL:-deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B}"
DATA="${DATA:-/data/prorl_mix.jsonl}"           # rows: {"prompt": ..., "label": ...}; labels may be JSON
GATEWAY="${GATEWAY:-http://127.0.0.1:8100}"

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
  --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
  --train.colocate_all \
  --vllm.num_engines 8 --vllm.tensor_parallel_size 1 --vllm.gpu_memory_utilization 0.6 --vllm.enable_sleep \
  --ds.enable_sleep --ds.zero_stage 3 --ds.param_dtype bf16 \
  --reward.remote_url "$GATEWAY/get_reward" \
  --data.prompt_dataset "$DATA" --data.input_key prompt --data.label_key label --data.apply_chat_template \
  --data.max_len 9216 --rollout.max_new_tokens 8192 \
  `# REINFORCE++ with a per-prompt baseline over 16 samples` \
  --algo.advantage.estimator reinforce_baseline --rollout.n_samples_per_prompt 16 \
  `# keep only prompt groups whose scores (Arbiter's 0/1 correctness) are neither all 0 nor all 1` \
  --algo.dynamic_filtering_enable --algo.dynamic_filtering_range 0 1 \
  `# clip-higher: 0.2 below, 0.27 above; token-level loss aggregation` \
  --actor.eps_clip_low_high 0.2 0.27 --actor.loss_agg_mode token-mean \
  --algo.kl.use_loss --algo.kl.estimator k3 --algo.kl.init_coef 0.001 \
  `# a truncated sample keeps only half its reward (the gateway also flags it: response/stopped = 0)` \
  --reward.stop_properly_penalty_coef 0.5 \
  --rollout.batch_size 256 --train.batch_size 2048 --train.micro_batch_size 2 --rollout.micro_batch_size 4 \
  --actor.adam.lr 2e-6 --actor.gradient_checkpointing_enable --ds.packing_samples \
  --rollout.temperature 1.2 \
  --ckpt.path ./ckpt/prorl_v2 --ckpt.save_steps 10 \
  --logger.wandb.project arbiter-prorl-v2
