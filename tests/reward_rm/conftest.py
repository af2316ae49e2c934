"""Fixtures of the reward_rm tests: tiny checkpoints built once per session, on local disk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.tiny_checkpoints import TinyCheckpoints, TinyPRMs, build, build_prm


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TinyCheckpoints]:
    yield build(tmp_path_factory.mktemp("tiny_rm"))


@pytest.fixture(scope="session")
def tiny_prm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TinyPRMs]:
    yield build_prm(tmp_path_factory.mktemp("tiny_prm"))
