"""Progress bars: a command that can take seconds draws a tqdm bar on stderr with ``--progress``
(or on a terminal), and none in a pipe, where a bar's lines would only clutter a log."""

from __future__ import annotations

import pytest

from runtime.cli import main
from tests.doc_examples import write_model

TUNE = ["tune", "conv2d", "--h", "4", "--w", "4", "--in-c", "16", "--out-c", "16", "--k", "1",
        "--trials", "2", "--workers", "1"]  # fmt: skip


@pytest.mark.parametrize("flag", [["--progress"], []], ids=["progress", "pipe"])
def test_tune_draws_a_bar_only_when_asked_or_on_a_terminal(flag, tmp_path, capsys):
    assert main([*TUNE, "--log", str(tmp_path / "t.jsonl"), *flag]) == 0
    err = capsys.readouterr().err
    assert ("trial/s" in err or "s/trial" in err) == bool(flag), err


def test_tune_refuses_progress_and_no_progress_together(capsys):
    assert main([*TUNE, "--progress", "--no-progress"]) != 0
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.parametrize("flag", [["--progress"], []], ids=["progress", "pipe"])
def test_a_gpu_run_on_the_cuda_simulator_counts_its_kernels(flag, tmp_path, monkeypatch, capsys):
    from compiler.targets.gpu.module import cuda_backend

    if cuda_backend() != "cuda-simulator":
        pytest.skip("a real GPU runs the kernels in milliseconds: no bar to show")
    monkeypatch.chdir(tmp_path)
    write_model(tmp_path / "model.onnx")
    argv = ["run", "model.onnx", "--target", "gpu", "--input-shape", "x=1,3,32,32", "--quiet"]
    assert main([*argv, *flag]) == 0
    err = capsys.readouterr().err
    assert ("on the CUDA simulator" in err and "kernel" in err) == bool(flag), err


@pytest.mark.gpu
@pytest.mark.parametrize("flag", [["--progress"], []], ids=["progress", "pipe"])
def test_a_gpu_layer_check_shows_its_elapsed_time_only_when_asked(flag, capsys):
    argv = ["layer", "dense", "--in-c", "16", "--out-c", "16", "--target", "gpu", "--check"]
    assert main([*argv, *flag]) == 0
    err = capsys.readouterr().err
    assert ("running dense" in err) == bool(flag), err


def test_progress_is_refused_where_it_shows_nothing(capsys):
    assert main(["layer", "dense", "--in-c", "16", "--out-c", "16", "--progress"]) != 0
    assert "--progress shows the run of --target gpu --check" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--progress"], []], ids=["progress", "pipe"])
def test_vtac_graph_on_vta_draws_a_bar_of_the_compiles_only_when_asked(flag, capsys, monkeypatch):
    monkeypatch.setenv("VTAC_CACHE_DIR", "off")  # compiled here, not read back from the cache
    assert main(["graph", "digits", "--target", "vta", *flag]) == 0
    err = capsys.readouterr().err
    assert ("group" in err and "%" in err) == bool(flag), err


def test_vtac_graph_refuses_progress_without_the_accelerator(capsys):
    assert main(["graph", "digits", "--progress"]) != 0
    assert "--progress applies to --target vta" in capsys.readouterr().err
