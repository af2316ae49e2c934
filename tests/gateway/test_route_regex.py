"""Route regexes from the config cannot stall the gateway.

`(x+x+)+y` used to stall the gateway's loop for 3 s on a 26-character prompt. A pattern with a
quantifier inside a quantifier is refused when the config loads; any other pattern runs with a
time bound and counts as no match when out of time.
"""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError

from services.common.saferegex import BoundedPattern, UnsafePatternError, check_pattern
from services.gateway.settings import GatewayServiceSettings


@pytest.mark.parametrize("pattern", ["(x+x+)+y", "(a*)*b", "(?:a|b+){2,}", "((ab)+c)+"])
def test_nested_quantifiers_are_refused_when_the_config_loads(pattern: str) -> None:
    with pytest.raises(ValidationError, match="repeats a part that itself repeats"):
        GatewayServiceSettings.model_validate({"routes": [{"recipe": "default", "prompt_regex": pattern}]})
    with pytest.raises(UnsafePatternError):
        check_pattern(pattern)


@pytest.mark.parametrize("pattern", ["gsm8k|math.*", "```python", r"\d+\.\d+", "(foo|bar)+baz", "^a{2,5}$"])
def test_ordinary_patterns_load(pattern: str) -> None:
    assert check_pattern(pattern) == pattern


def test_a_pattern_that_runs_out_of_time_is_no_match(caplog: pytest.LogCaptureFixture) -> None:
    slow = BoundedPattern("(a|aa)+b", timeout_s=0.01)  # passes the load check, backtracks at run time
    with caplog.at_level(logging.WARNING):
        assert slow.search("a" * 5000) is False
    assert "ran out of time" in caplog.text
    assert BoundedPattern("(a|aa)+b").search("aaab") is True
    assert BoundedPattern("GSM8K", ignore_case=True).fullmatch("gsm8k") is True
