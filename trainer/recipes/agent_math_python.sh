#!/usr/bin/env bash
# Multi-turn GRPO on math with a Python tool, through OpenRLHF's agent API (>= 0.10.2 dotted CLI).
# 1. trainer/recipes/start_reward_services.sh trainer/recipes/configs/agent_math.yaml
# 2. this script, on the Ray head node (the environment below must reach the rollout actors: with
#    a cluster started beforehand, export it before `ray start` too).
# With an agent, OpenRLHF calls no reward URL: trainer/openrlhf_agent.py drives one Arbiter episode
# per sample (docs/multi-turn.md); the episode's reward is the sum of its step rewards.
set -euo pipefail
MODEL="${MODEL:-Qwen/Qwen2.5-7B-Instruct}"
DATA="${DATA:-/data/math_train.jsonl}"          # rows: {"prompt": ..., "answer": ...}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
AGENT="${AGENT:-$HERE/../openrlhf_agent.py}"
export ARBITER_EPISODES="${ARBITER_EPISODES:-127.0.0.1:9100}"   # the gateway's gRPC (episodes.service)
export ARBITER_EPISODE_ENV="${ARBITER_EPISODE_ENV:-python_tool}"
export ARBITER_GATEWAY_WAIT_S="${ARBITER_GATEWAY_WAIT_S:-30}"     # outage policy, as the reward_func's

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
  --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
  --train.colocate_all \
  --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --vllm.gpu_memory_utilization 0.6 --vllm.enable_sleep \
  --ds.enable_sleep --ds.zero_stage 3 --ds.param_dtype bf16 \
  `# the reward: Arbiter's episodes, called by the agent turn by turn (no --reward.remote_url)` \
  --train.agent_func_path "$AGENT" \
  --data.prompt_dataset "$DATA" --data.input_key prompt --data.label_key answer --data.apply_chat_template \
  `# the whole trajectory (prompt, actions, tool outputs) fits max_len; each turn generates up to the rest` \
  --data.max_len 8192 --rollout.max_new_tokens 2048 \
  --algo.advantage.estimator group_norm --rollout.n_samples_per_prompt 8 \
  --algo.kl.use_loss --algo.kl.estimator k3 --algo.kl.init_coef 0.001 \
  --rollout.batch_size 128 --train.batch_size 1024 --train.micro_batch_size 4 --rollout.micro_batch_size 8 \
  --actor.adam.lr 1e-6 --actor.gradient_checkpointing_enable --ds.packing_samples \
  --rollout.temperature 1.0 \
  --ckpt.path ./ckpt/agent_math_python --ckpt.save_steps 20 \
  --logger.wandb.project arbiter-agent-math
