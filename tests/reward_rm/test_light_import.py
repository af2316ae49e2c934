"""The service package imports without torch; the transformers backend says how to get it."""

from __future__ import annotations

import subprocess
import sys

BLOCK_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch' (blocked by the test)")
        return None
sys.meta_path.insert(0, _NoTorch())
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH + code], capture_output=True, text=True, timeout=120
    )


def test_package_imports_without_torch() -> None:
    done = run(
        "import services.reward_rm.build, services.reward_rm.launch, services.evaluate.rm_eval\n"
        "import services.reward_rm.backends.transformers_backend, services.reward_rm.backends.vllm_backend\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, sorted(sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr


def test_missing_torch_names_the_extra_to_install() -> None:
    done = run(
        "from services.reward_rm._lazy import require\n"
        "try:\n    require('torch')\nexcept RuntimeError as exc:\n    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install -e '.[rm]'" in done.stdout
