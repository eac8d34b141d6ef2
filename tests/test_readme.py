"""The README's examples run as written, from a scratch folder.

The Python blocks run as they are. The `vtac` blocks run line by line, in order, in one scratch
folder (a later line reads what an earlier one wrote), with small stand-ins for the files a
user brings (:data:`tests.doc_examples.USER_FILES`). A line is what a shell would run: ``vtac``
and its arguments, then an optional ``# comment``; no shell syntax.
"""

from __future__ import annotations

import shlex

import pytest

from tests.conftest import ROOT
from tests.doc_examples import (
    USER_FILES,
    argv_of,
    commands,
    python_blocks,
    simulator_missing,
    write_user_files,
)

README = (ROOT / "README.md").read_text()
BLOCKS = python_blocks(README)
COMMANDS = commands(README)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {})  # noqa: S102


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The folder every command runs in, holding the user's files' stand-ins and its own
    compile cache (so that `vtac cache clear` empties nothing but this folder's)."""
    root = tmp_path_factory.mktemp("readme")
    write_user_files(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VTAC_CACHE_DIR", str(root / ".vtac-cache"))
        yield root


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=lambda i: f"line{i}")
def test_command_runs_as_written(index, scratch, monkeypatch, capsys):
    from runtime.cli import main

    line = COMMANDS[index]
    argv = argv_of(line)
    reason = simulator_missing(argv)
    if reason:
        pytest.skip(reason)
    monkeypatch.chdir(scratch)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, f"`{line}` exited {code}: {err.strip()[-2000:]}"


def test_the_readme_covers_every_subcommand():
    """Each subcommand appears on a line that runs, and the user's files are named plainly."""
    from runtime.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    run = {shlex.split(c, comments=True)[1] for c in COMMANDS}
    assert set(sub.choices) <= run, f"no README line runs {sorted(set(sub.choices) - run)}"
    words = {w.rstrip("/") for c in COMMANDS for w in shlex.split(c, comments=True)}
    for name in USER_FILES:
        assert name.rstrip("/") in words, f"no README line uses {name}"
