"""veRL's ToolAgentLoop with a trajectory's end: agent `arbiter_tool_agent` (veRL 0.9.1).

veRL's `tool_agent` loop (verl/experimental/agent_loop/tool_agent_loop.py) creates and releases a
tool instance around each call and never tells a tool that the trajectory ended; veRL 0.9.1 has no
interaction API (`verl/interactions`) either. This subclass adds the ends arbiter.adapters.verl_tool's
episodes need, and nothing else of veRL's loop changes:

- when the trajectory starts, each ArbiterTool's episode starts (a python_tool interpreter
  prestarts while the policy writes its first turn);
- when it ends, the final answer (the last generated turn, when it made no tool call) goes to
  the episode of the first ArbiterTool with `grade_final_answer` as a `final` step, which grades
  it with the sample's label as it is (a code block in it is never run: veRL's parser already
  said it holds no tool call), and every episode is finished (its interpreter freed), also when
  the loop raised or stopped on a length or turn limit. The tool keeps the episode's last turn
  for this answer (arbiter.adapters.verl_tool);
- with `episode_reward` (the default) the episode's reward becomes the trajectory's
  `reward_score` (veRL then skips its reward function for it, as for any agent loop that scores
  itself) and its logs `reward_extra_info` (the fixed key set of arbiter.adapters.verl_tool: the status
  one-hot, `trainer/unreachable`, the episode's counters, the trajectory's emergence keys, `acc`).
  Without it the summary goes to `extra_fields["arbiter_episode"]`, which veRL's reward managers
  pass to the reward function in `extra_info`.

Register it through veRL's agent loop config (`actor_rollout_ref.rollout.agent.agent_loop_config_path`):

    - name: arbiter_tool_agent
      _target_: arbiter.adapters.verl_agent_loop.ArbiterToolAgentLoop
      episode_reward: true

and name it per sample (`agent_name` column) or as `rollout.agent.default_agent_loop`.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from verl.experimental.agent_loop.agent_loop import register
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

from arbiter.adapters.verl_tool import ArbiterTool, EpisodeSummary

ACC_KEY = "acc"  # the episode's score (e.g. 0/1 correctness), as trainer/verl_reward.py names it


@register("arbiter_tool_agent")  # also when the module is imported; the YAML above is the usual way
class ArbiterToolAgentLoop(ToolAgentLoop):  # type: ignore[misc]
    def __init__(self, *args: Any, episode_reward: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.episode_reward = episode_reward
        self._agent_data: Any = None

    def _arbiter_tools(self, agent_data: Any) -> list[ArbiterTool]:
        active = cast(dict[str, Any], getattr(agent_data, "_active_tools", self.tools))
        return [tool for tool in active.values() if isinstance(tool, ArbiterTool)]

    async def _handle_pending_state(self, agent_data: Any, sampling_params: dict[str, Any]) -> Any:
        self._agent_data = agent_data  # one loop object per trajectory (veRL instantiates per sample)
        await asyncio.gather(*(tool.open(agent_data) for tool in self._arbiter_tools(agent_data)))
        return await super()._handle_pending_state(agent_data, sampling_params)

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any) -> Any:
        try:
            output = await super().run(sampling_params, priority=priority, **kwargs)
        except BaseException:
            if self._agent_data is not None:
                await asyncio.shield(self._conclude(self._agent_data, graded=False))
            raise
        if self._agent_data is None:
            return output
        summary = await asyncio.shield(self._conclude(self._agent_data, graded=True))
        if summary is not None:
            info = {**summary.logs, ACC_KEY: summary.score}
            if self.episode_reward:
                output.reward_score = summary.reward
                output.extra_fields["reward_extra_info"] = info
            else:
                output.extra_fields["arbiter_episode"] = {"reward": summary.reward, **info}
        return output

    async def _conclude(self, agent_data: Any, graded: bool) -> EpisodeSummary | None:
        """Finishes every episode of the trajectory; the graded one's summary."""
        tools = self._arbiter_tools(agent_data)
        grader = next((t for t in tools if t.grade_final_answer), None) if graded else None
        final = await self._final_answer(agent_data) if grader is not None else None
        summary: EpisodeSummary | None = None
        for tool in tools:
            concluded = await tool.conclude(agent_data, final if tool is grader else None)
            if tool is grader:
                summary = concluded
        return summary

    async def _final_answer(self, agent_data: Any) -> str | None:
        """The last generation's text when it made no tool call (special tokens dropped); None
        when it called a tool (the loop stopped on a limit: nothing to grade, the episode's
        reward stands). Read from the tokens, not the messages: veRL's loop does not append the
        turn it stopped on (max_assistant_turns, response length) to its messages."""
        ids = list(agent_data.response_ids or ())
        if not ids:
            return None
        active = cast(dict[str, Any], getattr(agent_data, "_active_tools", self.tools))
        _content, calls = await self.tool_parser.extract_tool_calls(
            ids, [tool.tool_schema for tool in active.values()]
        )
        if calls:
            return None
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))
