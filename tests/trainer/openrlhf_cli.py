"""OpenRLHF 0.11.2's own `train_ppo_ray` argument parser and post-parse checks, run on a recipe.

They live in the `if __name__ == "__main__":` block of openrlhf/cli/train_ppo_ray.py, whose
module-level imports need ray, torch, deepspeed and vLLM on GPUs. We compile that block from
the installed source unchanged, minus its last statement (`train(args)`), after the module's
standard-library imports (its other imports serve only `train`), and run it with the
recipe's arguments: every add_argument, the hierarchize step and every assertion and
adjustment after parsing are OpenRLHF's own code.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.trainer.openrlhf_peer import register_light_packages


class OpenRLHFRejected(Exception):
    """OpenRLHF's parser or one of its post-parse checks refused the arguments."""


def _stdlib_root(node: ast.stmt) -> bool:
    """A top-level import of the standard library only (argparse, os, datetime): kept."""
    if isinstance(node, ast.Import):
        return all(alias.name.split(".")[0] in sys.stdlib_module_names for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] in sys.stdlib_module_names
    return False


def _main_block(source_path: Path) -> ast.Module:
    """The module's standard-library imports, then its __main__ block without `train(args)`."""
    tree = ast.parse(source_path.read_text(), filename=str(source_path))
    imports = [node for node in tree.body if _stdlib_root(node)]
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id == "__name__"
        ):
            body = list(node.body)
            last = body[-1]
            assert (
                isinstance(last, ast.Expr)
                and isinstance(last.value, ast.Call)
                and isinstance(last.value.func, ast.Name)
                and last.value.func.id == "train"
            ), "openrlhf's main block no longer ends with train(args): update this reader"
            return ast.Module(body=[*imports, *body[:-1]], type_ignores=[])
    raise AssertionError(f"no __main__ block in {source_path}")


def parse_train_ppo_ray(argv: Sequence[str]) -> SimpleNamespace:
    """OpenRLHF's parsed, checked and adjusted `args` for `train_ppo_ray` with `argv`."""
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "openrlhf is not installed: pip install --no-deps openrlhf==0.11.2 (scripts/bootstrap.sh)"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    register_light_packages(root)
    importlib.import_module("openrlhf.utils.config")  # hierarchize: stdlib only
    source = root / "cli" / "train_ppo_ray.py"
    code = compile(_main_block(source), str(source), "exec")
    namespace: dict[str, object] = {"__name__": "openrlhf_cli_main"}
    saved = sys.argv
    sys.argv = ["train_ppo_ray", *argv]
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            exec(code, namespace)
    except SystemExit as exc:
        raise OpenRLHFRejected(errors.getvalue().strip() or f"exit {exc.code}") from None
    except AssertionError as exc:
        raise OpenRLHFRejected(f"post-parse check: {exc}") from None
    finally:
        sys.argv = saved
    args = namespace["args"]
    assert isinstance(args, SimpleNamespace)
    return args
