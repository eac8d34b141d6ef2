"""The operator registry (``compiler.registry``): every declared operator, under every key (the
reference, the quantizer, and each target), has an implementation or a registered reason; the
pieces agree with each other (quantization rules with their declarations, schedule families
with the schedules that exist, the accelerator's groups with the partition); the heuristic's
schedule for every accelerator group is a point of the template space the tuner searches."""

from __future__ import annotations

import numpy as np
import pytest

import isa
from compiler import registry
from compiler.errors import CompilerError
from compiler.graph import Graph, Node, TensorType, Var
from compiler.graph.reference import evaluate_node
from compiler.partition import partition_graph
from compiler.registry import CpuImpl, GpuImpl, Unsupported, VtaImpl
from compiler.strategy.schedule import KINDS

OPERATORS = registry.operators()


def test_every_operator_has_every_piece_or_a_reason():
    missing = [
        f"{op} on {key}"
        for op in OPERATORS
        for key in registry.KEYS
        if registry.support(key, op) is None
    ]
    assert not missing, "registered neither an implementation nor a reason: " + ", ".join(missing)
    empty = [
        f"{op} on {key}"
        for op in OPERATORS
        for key in registry.KEYS
        if isinstance(registry.support(key, op), Unsupported)
        and not registry.support(key, op).reason.strip()
    ]
    assert not empty


def test_nothing_is_registered_for_an_undeclared_operator():
    for key in registry.KEYS:
        stray = sorted(set(registry.registered(key)) - set(OPERATORS))
        assert not stray, f"{key} registers undeclared operators {stray}"


@pytest.mark.parametrize("key", ["reference", "cpu"])
def test_the_reference_and_the_cpu_implement_every_operator(key):
    # the host runs whatever the accelerator leaves, the reference checks everything
    assert [op for op in OPERATORS if registry.reason(key, op)] == []


def test_quantization_rules_follow_the_declarations():
    for op in OPERATORS:
        rule, quant = registry.support("quantize", op), registry.declaration(op).quant
        if quant in ("int8", "pass-through"):
            assert callable(rule), f"{op} is declared {quant} but has no int8 rule"
        else:
            assert isinstance(rule, Unsupported), f"{op} is declared {quant} yet has a rule"


def test_schedule_families_exist():
    gpu_families = {"conv2d", "dense", "softmax", "pool", "injective"}
    for op, impl in registry.implemented("cpu"):
        assert isinstance(impl, CpuImpl) and callable(impl.compute), op
        assert impl.schedule in KINDS, f"{op}: cpu schedule {impl.schedule!r}"
    for op, impl in registry.implemented("gpu"):
        assert isinstance(impl, GpuImpl), op
        assert impl.schedule in gpu_families, f"{op}: gpu schedule {impl.schedule!r}"


def test_accelerator_operators_are_groups_of_the_partition():
    cfg = isa.load_config("default")
    for op, impl in registry.implemented("vta"):
        assert isinstance(impl, VtaImpl), op
        assert impl.kind in ("gemm", "pool", "elementwise", "rescale"), op
        assert callable(impl.fits) and callable(impl.compile) and callable(impl.task), op
    # an elementwise operator on an int8 tensor is placed on the accelerator by its rule
    x = Var("x", TensorType((1, 16, 4, 4), "int8", "NCHW"))
    relu = Node("relu", (x,), name="r")
    part = partition_graph(Graph.from_outputs([x], [relu]), cfg)
    assert part.placement("r").device == "vta"
    # and an operator the accelerator does not implement names the registry's reason
    soft = Node("reshape", (x,), {"newshape": (1, 256)}, name="s")
    part = partition_graph(Graph.from_outputs([x], [soft]), cfg)
    assert part.placement("s").rule == "layout"


def test_an_unsupported_lookup_names_the_operator_the_target_and_why():
    with pytest.raises(registry.UnsupportedOperator, match="'softmax' on vta: float32"):
        registry.lookup("vta", "softmax")
    with pytest.raises(CompilerError, match="unknown registry key 'tpu'"):
        registry.support("tpu", "relu")


def _int8_cases():
    x = Var("x", TensorType((2, 5, 3, 4), "int8", "NCHW"))
    g = Var("g", TensorType((2, 5, 1, 1), "int8", "NCHW"))
    out = {"out_min": -128, "out_max": 127}
    return (
        [
            Node(
                "qmul", (x, g), {"multiplier": 12345, "shift": 20, "out_min": -100, "out_max": 120}
            ),
            Node("qmul", (x, x), {"multiplier": 3000, "shift": 12, **out}),
            Node(
                "qleaky_relu",
                (x,),
                {"pos_multiplier": 20000, "neg_multiplier": 2100, "shift": 15, **out},
            ),
            Node(
                "qprelu",
                (x, g),
                {
                    "neg_min": -128,
                    "neg_max": 3,
                    "slope_multiplier": 23000,
                    "slope_shift": 19,
                    "slope_min": -120,
                    "slope_max": 127,
                    "pos_multiplier": 17000,
                    "neg_multiplier": 9000,
                    "shift": 15,
                    **out,
                },
            ),  # fmt: skip
            Node(
                "qhard_sigmoid",
                (x,),
                {"multiplier": -700, "shift": 9, "offset": 40000, "out_max": 127},
            ),  # fmt: skip
            Node(
                "qhard_swish",
                (x,),
                {
                    "gate_multiplier": 500,
                    "gate_shift": 12,
                    "gate_offset": 1 << 14,
                    "multiplier": 9000,
                    "shift": 17,
                    # a fused add after it: -3 output steps and a fraction (units of 2**2)
                    "offset": -(3 << 17) + (5 << 2),
                    **out,
                },
            ),  # fmt: skip
        ],
        x,
        g,
    )


def test_the_int8_operators_compile_for_the_host_bit_exact():
    from compiler.model.host_groups import compile_host_groups, run_host_group

    nodes, x, g = _int8_cases()
    rng = np.random.default_rng(0)
    for node in nodes:
        graph = Graph.from_outputs([x, g], [node])
        (group,) = compile_host_groups(graph.nodes, graph.outputs)
        assert group.compiled, group.reason
        xv = rng.integers(-128, 128, x.type.shape).astype(np.int8)
        gv = rng.integers(-128, 128, g.type.shape).astype(np.int8)
        feeds = {id(x): xv, id(g): gv}
        got = run_host_group(group, feeds)[id(node)]
        want = evaluate_node(node, [feeds[id(v)] for v in node.inputs])
        np.testing.assert_array_equal(got, want, err_msg=node.op)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_the_heuristics_schedules_are_points_of_the_tuners_space(preset):
    """No drift between the heuristic and the tuner: each gemm group of ResNet-18 (the first
    layer's fold included) compiles with the heuristic's knobs, and those knobs are a valid
    point of the space of the group's registered template."""
    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import load_zoo
    from compiler.model.vta import quantize_partition
    from tests.compiler.vta.helpers import heuristic_points

    cfg = isa.load_config(preset)
    graph = from_onnx(load_zoo("resnet18", image_size=32))
    rng = np.random.default_rng(0)
    calib = {"data": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}
    _, part, _ = quantize_partition(graph, cfg, calibration=calib)
    assert len(heuristic_points(part, cfg)) >= 12


def test_vtac_ops_prints_the_matrix_and_refuses_an_unknown_operator(capsys):
    from runtime.cli import main

    assert main(["ops", "conv2d", "softmax", "--key", "vta"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["operator", "vta"]
    assert out[2].split()[:3] == ["conv2d", "yes", "(gemm)"]
    assert "the accelerator computes int8 and int32 only" in out[3]
    assert main(["ops", "convolution"]) != 0
    assert "unknown operator(s) 'convolution'" in capsys.readouterr().err
