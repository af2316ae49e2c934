#!/usr/bin/env bash
# Multi-turn GRPO on math with a Python tool, through veRL 0.9.1's agent loop (ToolAgentLoop).
# 1. trainer/recipes/start_reward_services.sh trainer/recipes/configs/agent_math.yaml
# 2. this script, on the Ray head node (the environment below must reach the rollout workers: with
#    a cluster started beforehand, export it before `ray start` too).
# Each trajectory is one Arbiter episode (docs/multi-turn.md): the policy's `python` tool calls run
# in its persistent sandboxed interpreter (client/arbiter/adapters/verl_tool.py), and agent `arbiter_tool_agent`
# (client/arbiter/adapters/verl_agent_loop.py) sends the final answer to the episode, finishes it and makes its
# reward the trajectory's, so veRL's reward function is not called for these samples.
# Parquet rows: prompt (chat messages), agent_name "arbiter_tool_agent" (or the default below),
# extra_info.tools_kwargs.python.create_kwargs.label: the reference answer.
set -euo pipefail
MODEL="${MODEL:-Qwen/Qwen2.5-7B-Instruct}"
TRAIN="${TRAIN:-/data/math_tool_train.parquet}"
VAL="${VAL:-/data/math_tool_val.parquet}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ARBITER="$(cd "$HERE/../.." && pwd)"
# veRL imports arbiter.adapters.verl_tool by name: `pip install "$ARBITER/client"` on every node first.
export ARBITER_EPISODES="${ARBITER_EPISODES:-127.0.0.1:9100}"   # the gateway's gRPC (episodes.service)
export ARBITER_GATEWAY_WAIT_S="${ARBITER_GATEWAY_WAIT_S:-30}"     # outage policy, as the reward's

python3 -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$TRAIN" data.val_files="$VAL" \
  data.train_batch_size=256 data.max_prompt_length=1024 data.max_response_length=6144 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.actor.ppo_mini_batch_size=64 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef=0.001 \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
  `# multi-turn: hermes <tool_call> blocks; tool calls count as python_tool turns (8 by default)` \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=8 \
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length=2048 \
  actor_rollout_ref.rollout.multi_turn.tool_config_path="$HERE/verl/verl_tool_config.yaml" \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/verl/agent_loops.yaml" \
  actor_rollout_ref.rollout.agent.default_agent_loop=arbiter_tool_agent \
  trainer.n_gpus_per_node=8 trainer.nnodes=1 \
  trainer.total_epochs=1 trainer.logger='["console"]' \
  "$@"
