"""judge_proxy: rewards from LLM judges behind OpenAI-compatible chat endpoints."""
