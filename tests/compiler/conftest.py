"""Shared fixtures of the compiler tests: golden files and hypothesis profiles.

Golden files live in ``tests/compiler/golden``; refresh them with ``pytest --update-golden``
(or ``VTAC_UPDATE_GOLDEN=1``) and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vtac compiler")
    group.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden IR files of tests/compiler/golden instead of comparing",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """``golden(name, text)`` compares ``text`` with ``golden/<name>.txt`` (or rewrites it)."""
    update = request.config.getoption("--update-golden") or os.environ.get("VTAC_UPDATE_GOLDEN")

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / f"{name}.txt"
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        if not path.exists():
            pytest.fail(f"missing golden file {path.name}; run pytest --update-golden")
        expected = path.read_text()
        assert text == expected, f"IR differs from golden file {path.name}:\n{text}"

    return check
