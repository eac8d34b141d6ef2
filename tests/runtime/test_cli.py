"""The ``vtac`` dispatcher itself: its version and how it writes standard output."""

from __future__ import annotations

import io
import subprocess
import sys

from runtime.cli import main, version


def test_version_names_the_distribution():
    out = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == f"vtac {version()}"
    assert version()[0].isdigit()


def test_stdout_is_flushed_line_by_line_into_a_pipe(monkeypatch):
    piped = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    assert not piped.line_buffering
    monkeypatch.setattr(sys, "stdout", piped)
    assert main(["--version"]) == 0
    assert piped.line_buffering


def _subcommands() -> dict[str, object]:
    import argparse

    from runtime.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_subcommand_help_ends_with_examples_that_parse():
    import shlex

    from runtime.cli import EXAMPLES, build_parser

    commands = _subcommands()
    assert set(commands) == set(EXAMPLES), set(commands) ^ set(EXAMPLES)
    for name, sub in commands.items():
        text = sub.format_help()
        assert text.rstrip().endswith(EXAMPLES[name][-1]), name
        assert 2 <= len(EXAMPLES[name]) <= 3 or name == "demo"
        for example in EXAMPLES[name]:
            argv = shlex.split(example.split("#")[0].split(">")[0])
            assert argv[0] == "vtac" and argv[1] == name, example
            build_parser().parse_args(argv[1:])  # every option named exists and parses
