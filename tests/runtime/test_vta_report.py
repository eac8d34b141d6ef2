"""What ``vtac run --target vta`` writes: the trace's layer slices carry the table's rows and
an energy counter; a run whose outputs cannot be written leaves nothing behind."""

from __future__ import annotations

import json

import pytest

from runtime.cli import main


def test_trace_slices_carry_the_rows_and_energy(tmp_path, capsys):
    trace = tmp_path / "t.json"
    assert main(["run", "digits", "--target", "vta", "--trace", str(trace), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    doc = json.loads(trace.read_text())
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("tid") == 99]
    rows = {r["name"]: r for r in report["layers"] if r["device"] == "vta"}
    assert [s["name"] for s in slices] == list(rows)
    for s in slices:
        assert s["args"]["cycles"] == rows[s["name"]]["cycles"] == s["dur"]
    counter = [e for e in doc["traceEvents"] if e.get("ph") == "C"]
    assert counter[-1]["args"]["uJ"] == pytest.approx(report["energy_uj"])


def test_nothing_is_written_when_an_output_cannot_be(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["run", "digits", "--target", "vta", "--trace", "t.json", "--output", "no/dir/o.npz"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "vtac run: error: --output no/dir/o.npz: directory no/dir does not exist" in err
    assert list(tmp_path.iterdir()) == []
