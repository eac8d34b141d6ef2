"""Fixtures of the GPU target tests: golden files of this directory, PTX availability.

Kernels run on numba's CUDA simulator (``tests/conftest.py`` sets ``NUMBA_ENABLE_CUDASIM=1``
unless it is already set); on a machine with a GPU, ``NUMBA_ENABLE_CUDASIM=0 pytest -m gpu``
runs the same tests on the device.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"


@pytest.fixture
def gpu_golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """``gpu_golden(name, text)`` compares with ``golden/<name>.txt`` here (``--update-golden``
    or ``VTAC_UPDATE_GOLDEN=1`` rewrites it)."""
    try:
        update = request.config.getoption("--update-golden")
    except ValueError:
        update = False
    update = update or os.environ.get("VTAC_UPDATE_GOLDEN")

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / f"{name}.txt"
        if update:
            path.write_text(text)
            return
        if not path.exists():
            pytest.fail(f"missing golden file {path.name}; run pytest --update-golden")
        assert text == path.read_text(), f"differs from golden file {path.name}:\n{text}"

    return check
