#!/usr/bin/env bash
# Classic RLHF PPO, the 70B recipe: SFT policy, critic initialised from the reward model,
# every rollout scored by the RM service (vLLM, tensor parallel) through the gateway.
# 1. the RM service on its own GPU node(s):
#      ARBITER_REWARD_RM__CHECKPOINT=/ckpt/rm-70b ARBITER_REWARD_RM__BACKEND=vllm python -m services.reward_rm
#    (`python -m services.reward_rm.launch /ckpt/rm-70b --tensor-parallel-size 8` prints the vllm command)
# 2. the gateway with configs/rm.yaml (its gateway.services lists the RM replicas)
# 3. this script, on the Ray head node.
set -euo pipefail
ACTOR="${ACTOR:-/ckpt/llama-3-70b-sft}"
RM="${RM:-/ckpt/llama-3-70b-rm}"                 # OpenRLHF train_rm output; also the critic's init
DATA="${DATA:-/data/prompts.jsonl}"
GATEWAY="${GATEWAY:-http://127.0.0.1:8100}"

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$ACTOR" --critic.model_name_or_path "$RM" \
  --actor.num_nodes 4 --actor.num_gpus_per_node 8 \
  --critic.num_nodes 2 --critic.num_gpus_per_node 8 \
  --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
  --vllm.num_engines 4 --vllm.tensor_parallel_size 8 --vllm.gpu_memory_utilization 0.85 \
  --ds.zero_stage 3 --ds.param_dtype bf16 --ds.adam_offload \
  `# no --reward.model_name_or_path: the reward comes from Arbiter's RM service` \
  --reward.remote_url "$GATEWAY/get_reward" \
  --data.prompt_dataset "$DATA" --data.input_key context_messages --data.apply_chat_template \
  --data.max_len 2048 --rollout.max_new_tokens 1024 \
  `# PPO with GAE and a KL penalty in the reward` \
  --algo.advantage.estimator gae --algo.kl.init_coef 0.01 \
  --rollout.batch_size 1024 --train.batch_size 128 --train.micro_batch_size 1 --rollout.micro_batch_size 2 \
  --actor.adam.lr 5e-7 --critic.adam.lr 9e-6 \
  --actor.gradient_checkpointing_enable --ds.packing_samples \
  --ckpt.path ./ckpt/ppo_70b --ckpt.save_steps 50 \
  --logger.wandb.project arbiter-ppo-70b
