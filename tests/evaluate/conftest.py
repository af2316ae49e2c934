"""Markers of this folder's slower tiers."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: renders the HTML report in headless Chromium")
    config.addinivalue_line("markers", "ray: scores on a local Ray instance (slow)")
