"""The sensitivity threshold (``--fp32-threshold`` of ``vtac run``/``compile``/``graph``,
``sensitivity=`` of the vta session): it reaches the quantizer, the report names the nodes
kept fp32 and why, and it is refused where it does not apply."""

import json

import pytest

from compiler.model.vta import quantization_scheme
from runtime.cli import main
from runtime.errors import SessionError
from runtime.session import InferenceSession


def test_vtac_graph_names_the_fp32_nodes_with_their_error(capsys):
    # a threshold below every node's error keeps them all fp32: each row says so and why
    assert main(["graph", "digits", "--target", "vta", "--fp32-threshold", "1e-9"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "fp32-sensitive" in line]
    assert len(rows) == 10 and all("> threshold 1e-09" in r for r in rows)
    assert main(["graph", "digits", "--target", "vta"]) == 0
    assert "fp32-sensitive" not in capsys.readouterr().out


def test_vtac_run_json_reports_the_scheme_and_placement(capsys):
    code = main(["run", "digits", "--target", "vta", "--fp32-threshold", "1e-9", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["quantization"] == quantization_scheme("percentile", "multiplier", 1e-9, 10)
    kept = [r for r in doc["layers"] if r.get("rule") == "fp32-sensitive"]
    assert kept and all(r["reason"].startswith("int8 error") for r in kept)
    assert main(["run", "digits", "--target", "vta", "--fp32-threshold", "off", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["quantization"] == quantization_scheme("percentile", "multiplier", "off")


def test_fp32_threshold_is_refused_where_it_does_not_apply(tmp_path, capsys):
    assert main(["run", "digits", "--target", "cpu", "--fp32-threshold", "0.2"]) != 0
    assert "--fp32-threshold applies to --target vta" in capsys.readouterr().err
    assert main(["run", "digits", "--target", "vta", "--fp32-threshold", "zero"]) != 0
    assert "sensitivity threshold 'zero'" in capsys.readouterr().err
    art = tmp_path / "digits.vtac"
    assert main(["compile", "digits", "--target", "vta", "--fp32-threshold", "off",
                 "-o", str(art)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["run", str(art), "--fp32-threshold", "0.2"]) != 0
    assert "--fp32-threshold applies when a model is compiled" in capsys.readouterr().err
    with pytest.raises(SessionError, match="sensitivity applies to target vta"):
        InferenceSession("digits", target="cpu", sensitivity=0.2)
    sess = InferenceSession("digits", target="vta", sensitivity="off")
    assert sess.accel.scheme == quantization_scheme("percentile", "multiplier", "off")
