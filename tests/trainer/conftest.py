"""tests/trainer/frameworks runs only in its own tier (scripts/test-frameworks.sh), inside the
frameworks' venvs; the main test command, in .venv where they are not installed, skips it."""

from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("ARBITER_FRAMEWORK_TESTS") == "1" else ["frameworks"]
