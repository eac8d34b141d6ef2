"""Every notebook in ``notebooks/`` runs top to bottom, and is committed without outputs.

A new ``notebooks/*.ipynb`` is picked up by the glob below; nothing needs registering. The kernel
runs with ``VTAC_NOTEBOOK_SIZE=small`` (notebooks pick small workloads from it; run by hand they
use full sizes) in a temporary directory, so files a notebook writes land there. A notebook that
fails, for instance because it uses a package feature that does not exist yet, fails its test:
it is never skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "python3"
TIMEOUT = 300  # seconds per cell


def committed_problems(nb: nbformat.NotebookNode) -> list[str]:
    """What keeps ``nb`` from being committed as it is: outputs, execution counts, a kernel
    other than ``python3`` (which every Jupyter with ipykernel has)."""
    problems = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            problems.append(f"cell {k} has outputs")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {k} has execution_count {cell.execution_count}")
    name = nb.metadata.get("kernelspec", {}).get("name")
    if name != KERNEL:
        problems.append(f"kernelspec name is {name!r}, not {KERNEL!r}")
    return problems


def test_notebooks_exist():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    problems = committed_problems(nb)
    assert not problems, (
        f"{path.name}: " + "; ".join(problems) + " (clear all outputs and save before committing)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("VTAC_NOTEBOOK_SIZE", "small")
    # the kernel chooses its own (inline) matplotlib backend, as under Jupyter
    monkeypatch.delenv("MPLBACKEND", raising=False)
    # the packages import from this checkout even in a kernel started in the temporary directory
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    )
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=TIMEOUT, kernel_name=KERNEL, resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    except CellExecutionError as e:
        pytest.fail(f"{path.name} failed:\n{e}", pytrace=False)
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in ran), "some cells did not run"


def test_make_notebooks_writes_executed_copies(tmp_path, monkeypatch):
    """``make notebooks`` (tools/execute_notebooks.py) writes each notebook with its outputs."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from execute_notebooks import main
    finally:
        sys.path.remove(str(ROOT / "tools"))
    monkeypatch.setenv("VTAC_NOTEBOOK_SIZE", "small")
    name = NOTEBOOKS[0].name
    assert main(["--out", str(tmp_path), name]) == 0
    nb = nbformat.read(tmp_path / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code)
    assert any(c.get("outputs") for c in code)
    assert main(["--out", str(tmp_path), "no_such_notebook"]) == 2
