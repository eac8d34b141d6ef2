"""Golden text files of the graph level live in ``tests/compiler/graph/golden``; refresh them
with ``pytest --update-golden`` (or ``VTAC_UPDATE_GOLDEN=1``) and review the diff."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

GRAPH_GOLDEN_DIR = Path(__file__).parent / "golden"


@pytest.fixture
def graph_golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """``graph_golden(name, text)`` compares ``text`` with ``golden/<name>.txt`` (or rewrites
    it under ``--update-golden``)."""
    update = request.config.getoption("--update-golden") or os.environ.get("VTAC_UPDATE_GOLDEN")

    def check(name: str, text: str) -> None:
        path = GRAPH_GOLDEN_DIR / f"{name}.txt"
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        if not path.exists():
            pytest.fail(f"missing golden file {path.name}; run pytest --update-golden")
        assert text == path.read_text(), f"graph differs from golden file {path.name}:\n{text}"

    return check
