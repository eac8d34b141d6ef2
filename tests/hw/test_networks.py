"""Whole networks on the RTL, group by group, against the simulator (``--device rtl``).

Every accelerator group runs on the RTL and on the simulator from the same DRAM image; the
tests check that each group's whole image is equal byte for byte and its cycle count equal, and
that a difference is reported by group, first differing tensor and both cycle counts (with the
CLI's exit status 1). ResNet-18 at 32x32 runs on Verilator (one testbench build for the
module), digits and a one-layer network on Icarus; ``VTA_RTL_SIMULATORS`` leaves the ResNet or
digits run out as it leaves out the rest of the suite's runs on that simulator.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

import vta_sim
from compiler.graph import Constant, Graph, Node, TensorType, Var
from runtime.errors import SessionError
from runtime.vta_rtl import RtlDevice
from tests.hw.conftest import require, selected_simulators

pytestmark = pytest.mark.rtl


def _feed(specs, seed=0):
    rng = np.random.default_rng(seed)
    return {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in specs}


def _one_conv():
    """A one-group network (quantize, conv, dequantize): quick on Icarus."""
    from runtime.vta_target import compile_network

    x = Var("x", TensorType((1, 3, 6, 6), "float32", "NCHW"))
    w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32), name="w")
    g = Graph.from_outputs([x], [Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")])
    feed = {"x": np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)}
    return compile_network(g, "default", calibration=feed), feed


@pytest.fixture(scope="module")
def verilator_device(build_root):
    """One Verilator device for the module: its testbench is built once, on the first group."""
    if "verilator" not in selected_simulators():
        pytest.skip("verilator left out by VTA_RTL_SIMULATORS")
    require("verilator")
    return RtlDevice("verilator", build_root=build_root)


def test_resnet18_at_32_on_verilator_equals_the_simulator_group_by_group(verilator_device):
    from runtime.session import InferenceSession

    sess = InferenceSession("resnet18", target="vta", config="vta-1x16x16", image_size=32)
    feed = _feed(sess.get_inputs())
    sim = sess.executor.run(feed)
    rtl = sess.executor.run(feed, device="rtl", rtl=verilator_device)
    groups = [k.name for k in sess.program.kernels if k.target == "vta"]
    assert [c.name for c in rtl.rtl_checks] == groups and len(groups) > 20
    bad = [c.line() for c in rtl.rtl_checks if not (c.equal and c.stats_equal and c.events_equal)]
    assert not bad, bad
    assert all(c.simulator == "verilator" for c in rtl.rtl_checks)
    assert rtl.rtl_agrees and rtl.to_json()["rtl_agrees"] is True
    # the RTL's own cycles, equal to the simulator's group by group, and the same outputs
    vta = [r for r in sim.layers if r.device == "vta"]
    assert [c.rtl_cycles for c in rtl.rtl_checks] == [r.cycles for r in vta]
    assert rtl.total_cycles == sim.total_cycles
    np.testing.assert_array_equal(rtl.outputs[0], sim.outputs[0])
    # a second run reuses the device's build
    built = verilator_device.build
    assert built is not None and verilator_device.build_seconds < 600


def test_digits_cli_on_icarus_reports_every_group_equal(capsys):
    from runtime.cli import main

    if "icarus" not in selected_simulators():
        pytest.skip("icarus left out by VTA_RTL_SIMULATORS")
    require("icarus")
    assert main(["run", "digits", "--target", "vta", "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert main(["run", "digits", "--target", "vta", "--device", "rtl", "--json"]) == 0
    rtl = json.loads(capsys.readouterr().out)
    assert rtl["device"] == "rtl" and rtl["simulator"] == "icarus" and rtl["rtl_agrees"]
    vta = [r for r in sim["layers"] if r["device"] == "vta"]
    assert [g["group"] for g in rtl["rtl_groups"]] == [r["name"] for r in vta]
    assert all(
        g["equal"] and g["bytes_equal"] and g["stats_equal"] and g["events_equal"]
        for g in rtl["rtl_groups"]
    )
    assert [g["rtl_cycles"] for g in rtl["rtl_groups"]] == [r["cycles"] for r in vta]
    assert [g["sim_cycles"] for g in rtl["rtl_groups"]] == [r["cycles"] for r in vta]
    assert rtl["outputs"] == sim["outputs"]


def test_a_differing_group_is_named_with_its_tensor_and_both_cycle_counts(monkeypatch, capsys):
    """The comparison itself: a simulator whose image differs in one ``out`` byte and whose
    count is one cycle longer makes the group differ, and the CLI report exits 1."""
    from runtime.vta_cli import _report

    require("icarus")
    net, feed = _one_conv()
    real = vta_sim.simulate

    def skewed(prog, trace=False):
        res = real(prog, trace=trace)
        s = prog.symbols["out"]
        res.dram[s.offset + 3] ^= 0x40
        res.cycles += 1
        return res

    monkeypatch.setattr(vta_sim, "simulate", skewed)
    result = net.run(feed, device="rtl", simulator="icarus")
    (check,) = result.rtl_checks
    assert not check.equal and not check.bytes_equal and not result.rtl_agrees
    assert check.sim_cycles == check.rtl_cycles + 1
    line = check.line()
    assert "conv: RTL (icarus) ran" in line and "DIFFERS" in line
    assert "tensor 'out' element" in line
    assert f"RTL {check.rtl_cycles:,}, simulator {check.sim_cycles:,}" in line
    args = argparse.Namespace(trace=None, output=None, json=False)
    assert _report(args, ["conv"], result) == 1
    out, err = capsys.readouterr()
    assert "rtl  conv: RTL (icarus) ran" in out and "0 of 1 accelerator groups" in out
    assert "the RTL differs from the simulator in 1 of 1 accelerator groups" in err
    assert "tensor 'out'" in err


def test_one_layer_network_on_icarus_agrees_and_prints_its_line(capsys):
    from runtime.vta_cli import _report

    require("icarus")
    net, feed = _one_conv()
    result = net.run(feed, device="rtl", simulator="icarus", progress=True)
    (check,) = result.rtl_checks
    assert check.equal and check.stats_equal and check.name == "conv"
    assert check.events_equal, check.events_diff
    assert check.rtl_cycles == net.run(feed).total_cycles
    args = argparse.Namespace(trace=None, output=None, json=False)
    assert _report(args, ["conv"], result) == 0
    out, err = capsys.readouterr()
    assert "rtl  conv: RTL (icarus) ran" in out and "equals the simulator" in out
    assert "1 of 1 accelerator groups equal the simulator" in out
    assert "running" in err  # the progress bar, on stderr


def test_simulator_needs_device_rtl_and_is_one_of_two():
    net, feed = _one_conv()
    with pytest.raises(SessionError, match="--simulator picks the HDL simulator of --device rtl"):
        net.run(feed, simulator="verilator")
    with pytest.raises(SessionError, match="simulator 'vcs': one of icarus, verilator"):
        net.run(feed, device="rtl", simulator="vcs")
    with pytest.raises(SessionError, match="--trace records the simulator's trace"):
        net.run(feed, device="rtl", trace=True)


def test_cli_refuses_simulator_without_device_rtl(capsys):
    from runtime.cli import main

    assert main(["run", "digits", "--target", "vta", "--simulator", "verilator"]) != 0
    assert "--simulator picks the HDL simulator of --device rtl" in capsys.readouterr().err


def test_session_takes_the_simulator_with_device_rtl_only():
    from runtime.session import InferenceSession

    with pytest.raises(SessionError, match="--simulator picks the HDL simulator of --device rtl"):
        InferenceSession("digits", target="vta", simulator="verilator")
    with pytest.raises(SessionError, match="simulator applies to target vta, not to 'cpu'"):
        InferenceSession("digits", simulator="icarus")
    with pytest.raises(SessionError, match="simulator 'vcs': one of icarus, verilator"):
        InferenceSession("digits", target="vta", device="rtl", simulator="vcs")


def test_session_run_raises_naming_the_differing_group(monkeypatch):
    """The session's side of a difference (the RTL itself replaced: a device whose every group
    differs in its cycles): ``run`` raises naming the group, ``last_run`` keeps the records."""
    from runtime.session import InferenceSession
    from runtime.vta_rtl import GroupCheck

    def fake_execute(self, name, prog):
        res = vta_sim.simulate(prog)
        check = GroupCheck(name, self.simulator, res.cycles + 2, res.cycles, True, None, True,
                           "", 0.0, int(prog.dram.size))  # fmt: skip
        self.checks.append(check)
        return res, check

    monkeypatch.setattr(RtlDevice, "execute", fake_execute)
    sess = InferenceSession("digits", target="vta", device="rtl", simulator="verilator")
    feed = _feed(sess.get_inputs())
    with pytest.raises(SessionError, match=r"differs from the simulator in 10 of 10") as e:
        sess.run(None, feed)
    assert "conv1: RTL (verilator) ran" in str(e.value) and "cycles: RTL " in str(e.value)
    assert not sess.last_run.rtl_agrees and len(sess.last_run.rtl_checks) == 10


def test_concat_and_split_in_place_agree_on_icarus():
    """A CSP block whose concat and Split the DRAM plan does in place (two groups store side by
    side into one tensor, two read their halves of another): every group equals the simulator
    on the RTL, and the outputs equal the integer reference."""
    from compiler.frontend.onnx_import import from_onnx
    from runtime.vta_target import compile_network
    from tests.runtime.test_vta_data_movement import _csp_feeds, _csp_model

    require("icarus")
    net = compile_network(from_onnx(_csp_model()), "default", calibration=_csp_feeds(1, 4))
    assert set(net.dram_plan.in_place_nodes) == {"cat", "h0", "h1"}
    feed = _csp_feeds(2, 1)[0]
    result = net.run(feed, device="rtl", simulator="icarus")
    assert [c.name for c in result.rtl_checks] == ["p", "q", "m", "y0", "y1"]
    assert result.rtl_agrees, [c.line() for c in result.rtl_checks if not c.equal]
    for got, want in zip(result.outputs, net.reference(feed), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["conv", "depthwise"])
def test_a_hard_swish_with_a_fused_affine_equals_the_simulator_on_icarus(kind):
    """A convolution, its hard swish and the constant multiply and add after it, in one group
    on ``vta-1x16x16`` (the add as the rounding shift's offset: ``ADD`` immediates around its
    last ``SHR``), byte for byte and cycle for cycle on the RTL."""
    from compiler.frontend.onnx_import import from_onnx
    from runtime.vta_target import compile_network
    from tests.runtime.test_vta_hard_activations import hswish_model

    require("icarus")
    rng = np.random.default_rng(9)
    model, shape = hswish_model(kind, rng, plus=-0.37)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(3)]
    net = compile_network(from_onnx(model), "vta-1x16x16", calibration=calib, sensitivity="off")
    rules = {p.node: p.rule for p in net.partition.placements}
    assert rules["hswish"] == "qhard_swish-fused", rules
    (swish,) = [n for n in net.graph.nodes if n.op == "qhard_swish"]
    assert swish.attrs["offset"] != 0
    feed = {"x": rng.standard_normal(shape).astype(np.float32)}
    result = net.run(feed, device="rtl", simulator="icarus")
    (check,) = result.rtl_checks
    assert check.equal and check.stats_equal and check.events_equal, check.line()
    np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
