"""Optional heavy imports (torch, transformers) with one clear error when they are missing."""

from __future__ import annotations

import importlib
from typing import Any

INSTALL_HINT = "pip install -e '.[rm]'"


def require(module: str) -> Any:
    """Import `module` at first use; the service package itself must import without it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise RuntimeError(
            f"reward_rm needs {module.split('.')[0]} for this: install the rm extra ({INSTALL_HINT})"
        ) from exc
