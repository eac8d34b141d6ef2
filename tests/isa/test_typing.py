"""isa/ is the contract every other package builds on: it stays mypy clean."""

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_isa_is_mypy_clean():
    if shutil.which("mypy") is None and not (ROOT / ".venv" / "bin" / "mypy").exists():
        pytest.skip("mypy is not installed (it comes with the dev extra)")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "isa"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
