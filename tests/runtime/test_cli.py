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
