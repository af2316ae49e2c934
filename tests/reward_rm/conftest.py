"""Fixtures of the reward_rm tests: tiny checkpoints built once per session, on local disk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.tiny_checkpoints import TinyCheckpoints, build


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vllm: needs a vLLM CPU server in its own venv (created on demand)")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TinyCheckpoints]:
    yield build(tmp_path_factory.mktemp("tiny_rm"))
