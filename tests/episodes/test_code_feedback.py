"""code_feedback: the visible tests' failures come back as feedback, the hidden tests pay."""

from __future__ import annotations

import json

from services.reward_rules.code import CodeConfig, CodeGrader
from services.reward_rules.dispatch import RulesGrader
from tests.episodes.helpers import Episode, served

LABEL = json.dumps(
    {
        "visible": {"kind": "stdio", "cases": [{"input": "1 2\n", "output": "3"}]},
        "hidden": {
            "kind": "stdio",
            "cases": [{"input": "10 20\n", "output": "30"}, {"input": "-5 5\n", "output": "0"}],
        },
    }
)
WRONG = "```python\na, b = map(int, input().split())\nprint(a - b)\n```"
RIGHT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
OVERFIT = "```python\nprint(3)\n```"  # passes the visible test only


async def test_feedback_then_hidden_tests() -> None:
    grader = RulesGrader({"code": CodeGrader(CodeConfig())}, default="code")
    async with served(grader=grader) as (_, client):
        episode = Episode(client, "repair")
        await episode.start(environment="code_feedback", prompt="Add two numbers.", label=LABEL)
        first = await episode.step(WRONG)
        assert first["done"] is False and first["status"] == "OK", first
        assert (
            first["feedback"].startswith("<feedback>")
            and first["feedback"].strip() != "<feedback>\n\n</feedback>"
        )
        second = await episode.step(RIGHT)
        assert second["done"] is True and second["reward"] == 1.0 and second["score"] == 1.0
        finished = await episode.finish()
        assert finished["turns"] == 2 and finished["logs"]["episode/correct"] == 1

        gamer = Episode(client, "overfit")
        await gamer.start(environment="code_feedback", prompt="Add two numbers.", label=LABEL)
        final = await gamer.step(OVERFIT)  # the visible test passes: graded on the hidden ones
        assert final["done"] is True and final["reward"] == 0.0

        limited = Episode(client, "limited")
        await limited.start(environment="code_feedback", prompt="Add.", label=LABEL, max_turns=2)
        assert (await limited.step(WRONG))["done"] is False
        last = await limited.step(WRONG)
        assert last["done"] is True and last["reward"] == 0.0

        broken = Episode(client, "broken")
        await broken.start(environment="code_feedback", label="not json")
        bad = await broken.step(RIGHT)
        assert bad["done"] is True and bad["status"] == "INVALID_INPUT"
