"""The README's Python examples run as written, from a scratch folder."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {})  # noqa: S102


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2
