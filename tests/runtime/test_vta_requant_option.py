"""The requantization and calibrator options (``--requant`` and ``--calibrator`` of ``vtac
run``/``vtac compile``, ``requant=`` and ``calibrator=`` of the vta session): each reaches the
quantizer, the report names the scheme, and each is refused where it does not apply (another
target, an already compiled artifact)."""

import json

import numpy as np
import pytest

from compiler.model.vta import quantization_scheme
from runtime.cli import main
from runtime.errors import SessionError
from runtime.session import InferenceSession


def test_vtac_run_with_vta_requantization_reports_the_scheme(capsys):
    code = main(["run", "digits", "--target", "vta", "--requant", "vta", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["quantization"] == quantization_scheme("percentile", "vta")


def test_vtac_compile_keeps_the_requantization_and_its_artifact_refuses_another(tmp_path, capsys):
    art = tmp_path / "digits.vtac"
    argv = ["compile", "digits", "--target", "vta", "--requant", "shift", "-o", str(art)]
    assert main(argv) == 0
    capsys.readouterr()
    assert InferenceSession(str(art)).accel.scheme == quantization_scheme("percentile", "shift")
    assert main(["run", str(art), "--requant", "vta"]) != 0
    assert "--requant applies when a model is compiled" in capsys.readouterr().err


def test_requant_is_refused_on_other_targets(capsys):
    assert main(["run", "digits", "--target", "cpu", "--requant", "vta"]) != 0
    assert "--requant applies to --target vta" in capsys.readouterr().err
    with pytest.raises(SessionError, match="requant applies to target vta"):
        InferenceSession("digits", target="cpu", requant="vta")


def test_session_requant_keyword_quantizes_with_vta_scheme():
    sess = InferenceSession("digits", target="vta", requant="vta")
    assert sess.accel.scheme == quantization_scheme("percentile", "vta")
    x = np.random.default_rng(0).standard_normal((1, 1, 28, 28)).astype(np.float32)
    (logits,) = sess.run(None, {"data": x})
    assert logits.shape == (1, 10) and np.isfinite(logits).all()


def test_the_calibrator_option_reaches_the_quantizer_and_is_refused_where_it_does_not_apply(
    tmp_path, capsys
):
    art = tmp_path / "digits.vtac"
    argv = ["compile", "digits", "--target", "vta", "--calibrator", "mse", "-o", str(art)]
    assert main(argv) == 0
    capsys.readouterr()
    assert InferenceSession(str(art)).accel.scheme == quantization_scheme("mse", "multiplier")
    assert main(["run", str(art), "--calibrator", "kl"]) != 0
    assert "--calibrator applies when a model is compiled" in capsys.readouterr().err
    assert main(["run", "digits", "--target", "cpu", "--calibrator", "kl"]) != 0
    assert "--calibrator applies to --target vta" in capsys.readouterr().err
    assert main(["graph", "digits", "--calibrator", "kl"]) != 0
    assert "--calibrator applies to --target vta" in capsys.readouterr().err
    with pytest.raises(SessionError, match="calibrator applies to target vta"):
        InferenceSession("digits", target="cpu", calibrator="kl")
    with pytest.raises(SessionError, match="calibrator 'max': one of kl, minmax, mse, percentile"):
        InferenceSession("digits", target="vta", calibrator="max")
    with pytest.raises(SessionError, match="calibrator applies when a model is compiled"):
        InferenceSession(str(art), calibrator="kl")
