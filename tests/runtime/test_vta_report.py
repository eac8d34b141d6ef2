"""What ``vtac run --target vta`` writes: the trace's layer slices carry the table's rows and
an energy counter; a run whose outputs cannot be written leaves nothing behind."""

from __future__ import annotations

import json

import numpy as np
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
    # the host groups on their own track, between the accelerator groups on one time axis
    host = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("tid") == 98]
    # the first host group quantizes the input, folds it for the first convolution and packs
    # the fold into the block layout
    assert host and host[0]["name"] == "data.quantize"
    assert host[0]["args"]["ops"] == "quantize+im2col+pack"
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices + host)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:], strict=False))
    assert any(h["ts"] >= s["ts"] + s["dur"] for h in host for s in slices)  # one after a group


def test_nothing_is_written_when_an_output_cannot_be(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["run", "digits", "--target", "vta", "--trace", "t.json", "--output", "no/dir/o.npz"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "vtac run: error: --output no/dir/o.npz: directory no/dir does not exist" in err
    assert list(tmp_path.iterdir()) == []


def test_plot_draws_the_per_layer_figure_on_every_target(tmp_path, capsys):
    vta, cpu = tmp_path / "vta.png", tmp_path / "cpu.png"
    assert main(["run", "digits", "--target", "vta", "--plot", str(vta)]) == 0
    assert main(["run", "digits", "--repeat", "3", "--plot", str(cpu)]) == 0
    out = capsys.readouterr().out
    assert "medians of 3 runs" in out
    for png in (vta, cpu):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv, what",
    [
        (["--plot", "f.xyz"], "unknown image format 'xyz'"),
        (["--repeat", "0"], "argument --repeat: 0 is outside 1..10000"),
        (["--target", "vta", "--repeat", "2"], "--repeat applies to --target cpu or gpu"),
    ],
)
def test_bad_plot_and_repeat_are_refused_before_any_work(tmp_path, capsys, monkeypatch, argv, what):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "digits", *argv]) != 0
    err = capsys.readouterr().err
    assert what in err and "feeding" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_data_is_refused_on_the_accelerator(bad):
    from compiler.quantize.requant import QuantizeError
    from runtime.errors import SessionError
    from runtime.session import InferenceSession

    sess = InferenceSession("digits", target="vta")
    x = np.zeros((1, 1, 28, 28), np.float32)
    x[0, 0, 3, 4] = bad
    with pytest.raises(SessionError, match=r"1 of 784 values to quantize are NaN or Inf"):
        sess.run(None, {"data": x})
    with pytest.raises(QuantizeError, match=r"input 'data' has non-finite values"):
        InferenceSession("digits", target="vta", calibration=x)


def test_the_report_names_the_int8_scheme_and_an_artifact_keeps_it(tmp_path, capsys):
    assert main(["run", "digits", "--target", "vta", "--json"]) == 0
    scheme = json.loads(capsys.readouterr().out)["quantization"]
    assert "per output channel" in scheme and "multiplier" in scheme
    art = tmp_path / "d.vtac"
    assert main(["compile", "digits", "--target", "vta", "-o", str(art)]) == 0
    capsys.readouterr()
    assert main(["run", str(art)]) == 0
    assert f"int8 scheme: {scheme}" in capsys.readouterr().out


@pytest.mark.parametrize("target", ["cpu", "vta"])
def test_quiet_prints_the_outputs_and_one_line_of_totals(target, capsys):
    assert main(["run", "digits", "--target", target, "--quiet"]) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.out.splitlines() if ln]
    assert lines[0].startswith("logits: ") and lines[-1].startswith("total: ")
    assert len(lines) == 3 and captured.err == ""  # no table, legend or notice
