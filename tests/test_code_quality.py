"""ruff and mypy are part of the test suite, so CI keeps them clean."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(REPO_ROOT / ".venv" / "bin")) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return path


def test_ruff_is_clean() -> None:
    result = subprocess.run([_tool("ruff"), "check", "daemon", "tests", "bench"], cwd=REPO_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
