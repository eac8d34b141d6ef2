"""The int8 network's agreement with the float one on its own calibration data: quantization
measures it (the lowest cosine per output over the batches, from the bias correction's walk),
and a build warns, naming the output and what to try, when it is under
``INT8_COSINE_TARGET``; ``vtac`` prints the warning as one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from compiler.errors import QuantizeWarning
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.model import vta as vta_model
from compiler.quantize import QuantizedGraph, quantize_graph


def _net() -> tuple[Graph, list[dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 4, 8, 8), "float32"))
    w = Constant(rng.normal(0, 0.3, (8, 4, 3, 3)).astype(np.float32), name="w")
    conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    g = Graph.from_outputs([x], [Node("relu", (conv,), name="act")])
    return g, [{"x": rng.normal(size=(1, 4, 8, 8)).astype(np.float32)} for _ in range(3)]


def test_quantization_measures_each_outputs_cosine_on_the_calibration_data():
    g, batches = _net()
    q = quantize_graph(g, batches)
    assert isinstance(q, QuantizedGraph) and len(q.calibration_cosine) == 1
    assert 0.99 < q.calibration_cosine[0] <= 1.0 + 1e-9
    # without bias correction nothing walks the int8 graph: not measured
    assert quantize_graph(g, batches, bias_correction=False).calibration_cosine == ()


def test_a_build_warns_when_an_output_is_far_from_fp32():
    x = Var("x", TensorType((1, 4), "float32"))
    g = Graph.from_outputs([x], [Node("relu", (x,), name="probs")])

    def measured(cosines):
        return QuantizedGraph(g.inputs, g.nodes, g.outputs, "net", calibration_cosine=cosines)

    with pytest.warns(QuantizeWarning, match=r"graph net: int8 output 'probs' has cosine 0\.612 "
                      r"against fp32 on its own calibration data .*--fp32-threshold"):  # fmt: skip
        vta_model.warn_if_far_from_fp32(measured((0.612,)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vta_model.warn_if_far_from_fp32(measured((0.97,)))
        vta_model.warn_if_far_from_fp32(measured(()))
        vta_model.warn_if_far_from_fp32(g)


def test_vtac_prints_the_warning_as_one_line(monkeypatch, capsys):
    from runtime.cli import main

    monkeypatch.setattr(vta_model, "INT8_COSINE_TARGET", 1.01)  # every network is "far"
    assert main(["run", "digits", "--target", "vta", "--quiet"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "warning:" in ln]
    assert len(lines) == 1 and lines[0].startswith("vtac run: warning: graph ")
    assert "against fp32 on its own calibration data" in lines[0]


def test_auto_threshold_takes_the_first_whose_outputs_keep_the_target(monkeypatch):
    import importlib

    from compiler.quantize import sensitivity_thresholds
    from compiler.quantize.requant import QuantizeError

    # the module (the package exports a function of the same name)
    realize = importlib.import_module("compiler.quantize.realize")

    assert sensitivity_thresholds("auto") == (0.1, 0.05, 0.03, 0.02, 0.01)
    assert sensitivity_thresholds("0.2") == (0.2,) and sensitivity_thresholds("off") is None
    with pytest.raises(QuantizeError, match="neither a number nor 'off' or 'auto'"):
        sensitivity_thresholds("sometimes")
    g, batches = _net()
    q = quantize_graph(g, batches, sensitivity="auto")
    assert q.threshold == 0.1 and min(q.calibration_cosine) >= 0.9  # the first already does
    monkeypatch.setattr(realize, "INT8_COSINE_TARGET", 1.01)  # no threshold can reach it
    q = quantize_graph(g, batches, sensitivity="auto")
    assert q.threshold == 0.01  # every one tried, the last taken


def test_vtac_reports_the_threshold_auto_chose(capsys):
    import json

    from runtime.cli import main

    assert main(["run", "digits", "--target", "vta", "--fp32-threshold", "auto", "--json"]) == 0
    scheme = json.loads(capsys.readouterr().out)["quantization"]
    assert "kept fp32 (own int8 error over 0.1, relative RMS against fp32; the threshold " in scheme
    assert "chosen automatically: the first of 0.1, 0.05, 0.03, 0.02, 0.01" in scheme
