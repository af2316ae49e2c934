#!/usr/bin/env bash
# Code RL: unit tests run in Arbiter's sandboxed code grader (labels like
# {"grader": "code", "tests": {"kind": "stdio", "cases": [...]}}), GRPO over 8 samples.
# 1. trainer/recipes/start_reward_services.sh trainer/recipes/configs/mixed.yaml
# 2. this script, on the Ray head node.
set -euo pipefail
MODEL="${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}"
DATA="${DATA:-/data/code_train.jsonl}"          # rows: {"prompt": ..., "tests": "<label JSON>"}
GATEWAY="${GATEWAY:-http://127.0.0.1:8100}"

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
  --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
  --train.colocate_all \
  --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --vllm.gpu_memory_utilization 0.6 --vllm.enable_sleep \
  --ds.enable_sleep --ds.zero_stage 3 --ds.param_dtype bf16 \
  --reward.remote_url "$GATEWAY/get_reward" \
  --data.prompt_dataset "$DATA" --data.input_key prompt --data.label_key tests --data.apply_chat_template \
  --data.max_len 8192 --rollout.max_new_tokens 6144 \
  --algo.advantage.estimator group_norm --rollout.n_samples_per_prompt 8 \
  `# a group where every program passes (or fails) teaches nothing: drop it` \
  --algo.dynamic_filtering_enable --algo.dynamic_filtering_range 0 1 \
  --algo.kl.use_loss --algo.kl.estimator k3 --algo.kl.init_coef 0.001 \
  --rollout.batch_size 128 --train.batch_size 1024 --train.micro_batch_size 2 --rollout.micro_batch_size 4 \
  --actor.adam.lr 1e-6 --actor.gradient_checkpointing_enable --ds.packing_samples \
  --ckpt.path ./ckpt/code_rl --ckpt.save_steps 20 \
  --logger.wandb.project arbiter-code-rl
