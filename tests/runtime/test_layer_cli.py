"""``vtac layer``, ``vtac bench`` and ``vtac demo``."""

import json

from runtime.cli import main


def test_layer_check_json(tmp_path, capsys):
    prog = tmp_path / "p.npz"
    code = main(["layer", "conv2d", "--h", "8", "--w", "8", "--in-c", "8", "--out-c", "16",
                 "--k", "3", "--stride", "1", "--pad", "1", "--relu", "--vthreads", "2",
                 "-o", str(prog), "--check", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and prog.exists()
    assert {"match", "cycles", "ideal_cycles", "utilization", "roofline_cycles",
            "dram_bytes"} <= set(out)  # fmt: skip
    assert out["match"] is True and out["ideal_cycles"] == 8 * 8 * 8 * 16 * 9 / 16


def test_layer_compiles_without_running(tmp_path, capsys):
    code = main(["layer", "dense", "--in-c", "64", "--out-c", "32", "--config", "4x4x4",
                 "-o", str(tmp_path / "d.npz")])  # fmt: skip
    assert code == 0 and "instructions" in capsys.readouterr().out


def test_bench_prints_the_table_and_findings_without_targets(capsys):
    assert main(["bench", "resnet18-layers", "--layers", "C9"]) == 0
    out = capsys.readouterr().out
    assert "C9" in out and "roofline" in out and "findings:" in out
    assert "target" not in out.lower() and "NOT met" not in out


def test_demo_runs_the_main_job_and_writes_what_it_names(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "ResNet-18" in out and "vta-1x16x16" in out and "layer4.1.conv2" in out
    assert "what to try next:" in out and "NOT met" not in out
    for name in ("demo_network.png", "demo_gantt.png", "demo_trace.json"):
        assert (tmp_path / "out" / name).stat().st_size > 0 and f"out/{name}" in out
    assert "DRAM image equal; cycles equal" in out or "RTL check skipped" in out


def test_layer_arguments_are_bounded_with_one_line_errors(capsys):
    for args, what in [
        (["--stride", "0"], "argument --stride: 0 is outside"),
        (["--in-c", "0"], "argument --in-c: 0 is outside"),
        (["--k", "0"], "argument --k: 0 is outside"),
        (["--seed", "-1"], "argument --seed: -1 is outside"),
        (["--batch", "0"], "argument --batch: 0 is outside"),
        (["--h", "1024", "--w", "1024", "--in-c", "4096", "--out-c", "4096"], "multiply-acc"),
        (["--k", "1", "--pad", "1", "--stride", "3", "--h", "1", "--w", "1"], "zero padding"),
        (["--k", "5", "--h", "2", "--w", "2"], "larger than the padded input"),
    ]:
        code = main(["layer", "conv2d", *args])
        err = capsys.readouterr().err
        assert code != 0 and err.count("\n") == 1 and what in err, (args, err)
        assert err.startswith("vtac layer: error: ")


def test_a_failed_layer_leaves_no_program_file(tmp_path, capsys):
    out = tmp_path / "p.npz"
    assert main(["layer", "conv2d", "--k", "5", "--h", "2", "--w", "2", "-o", str(out)]) == 1
    assert main(["layer", "conv2d", "-o", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bench_refuses_unknown_layers(capsys):
    assert main(["bench", "resnet18-layers", "--layers", "C99"]) == 1
    assert "unknown layer(s) ['C99']" in capsys.readouterr().err
