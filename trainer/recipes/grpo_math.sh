#!/usr/bin/env bash
# GRPO on math with rule rewards from Arbiter (OpenRLHF >= 0.10.2 dotted CLI).
# 1. trainer/recipes/start_reward_services.sh trainer/recipes/configs/math.yaml
# 2. this script, on the Ray head node.
set -euo pipefail
MODEL="${MODEL:-Qwen/Qwen2.5-7B-Instruct}"
DATA="${DATA:-/data/math_train.jsonl}"          # rows: {"prompt": ..., "answer": ...}
GATEWAY="${GATEWAY:-http://127.0.0.1:8100}"

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
  --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
  --train.colocate_all \
  --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --vllm.gpu_memory_utilization 0.6 --vllm.enable_sleep \
  --ds.enable_sleep --ds.zero_stage 3 --ds.param_dtype bf16 \
  `# the reward: one URL, every sample POSTed as it finishes; the gateway batches and composes` \
  --reward.remote_url "$GATEWAY/get_reward" \
  --data.prompt_dataset "$DATA" --data.input_key prompt --data.label_key answer --data.apply_chat_template \
  --data.max_len 5120 --rollout.max_new_tokens 4096 \
  `# GRPO: group-normalised advantages over 8 samples per prompt, KL as a k3 loss` \
  --algo.advantage.estimator group_norm --rollout.n_samples_per_prompt 8 \
  --algo.kl.use_loss --algo.kl.estimator k3 --algo.kl.init_coef 0.001 \
  --rollout.batch_size 128 --train.batch_size 1024 --train.micro_batch_size 4 --rollout.micro_batch_size 8 \
  --actor.adam.lr 1e-6 --actor.gradient_checkpointing_enable --ds.packing_samples \
  --rollout.temperature 1.0 \
  --ckpt.path ./ckpt/grpo_math --ckpt.save_steps 20 \
  --logger.wandb.project arbiter-grpo-math
