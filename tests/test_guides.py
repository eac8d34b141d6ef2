"""Every guide of docs/guide/ runs as written, from a scratch folder.

A page's examples (its `vtac` lines and its Python blocks, :mod:`tests.doc_examples`) run in
the page's order in one scratch folder of that page, which holds stand-ins for the files a user
brings; a later example reads what an earlier one wrote. An example on the RTL is skipped, with
the reason, when its HDL simulator is not installed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.doc_examples import Step, argv_of, simulator_missing, steps, write_user_files

GUIDES = ROOT / "docs" / "guide"
PAGES = sorted(p for p in GUIDES.glob("*.md") if p.name != "README.md")
STEPS = [(page, step) for page in PAGES for step in steps(page.read_text())]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """One scratch folder per page, made the first time the page's examples ask for it."""
    folders: dict[str, Path] = {}

    def folder(page: Path) -> Path:
        if page.stem not in folders:
            root = tmp_path_factory.mktemp(page.stem)
            write_user_files(root)
            folders[page.stem] = root
        return folders[page.stem]

    return folder


def _python_simulator_missing(code: str) -> str | None:
    """Why a Python example cannot run here (it names an HDL simulator not installed), or None."""
    for name, tool in (("icarus", "iverilog"), ("verilator", "verilator")):
        if re.search(rf"""simulator\s*=\s*["']{name}["']""", code) and not shutil.which(tool):
            return f"{tool} is not installed"
    return None


@pytest.mark.parametrize(
    ("page", "step"), STEPS, ids=[f"{page.stem}-{step.label()}" for page, step in STEPS]
)
def test_example_runs_as_written(page: Path, step: Step, scratch, monkeypatch, capsys):
    where = f"docs/guide/{page.name} line {step.line}"
    if step.kind == "python":
        reason = _python_simulator_missing(step.text)
        if reason:
            pytest.skip(reason)
        monkeypatch.chdir(scratch(page))
        exec(compile(step.text, where, "exec"), {})  # noqa: S102
        return
    from runtime.cli import main

    argv = argv_of(step.text)
    reason = simulator_missing(argv)
    if reason:
        pytest.skip(reason)
    monkeypatch.chdir(scratch(page))
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, f"{where}: `{step.text}` exited {code}: {err.strip()[-2000:]}"


def test_every_guide_has_an_example_that_runs():
    for page in PAGES:
        assert any(s.kind == "vtac" for s in steps(page.read_text())), f"{page.name}: no command"


def test_the_index_lists_every_guide():
    """docs/guide/README.md links each page, and each link names a page that exists."""
    links = set(re.findall(r"\]\(([^)]+\.md)\)", (GUIDES / "README.md").read_text()))
    missing = {p.name for p in PAGES} - links
    assert not missing, f"docs/guide/README.md does not list {sorted(missing)}"
    dangling = {link for link in links if not (GUIDES / link).is_file()}
    assert not dangling, f"docs/guide/README.md links missing pages {sorted(dangling)}"
