"""ResNet-18's fused groups on the CPU (fp32, batch 1, 224x224) against onnxruntime.

Every distinct fused group of ResNet-18 as the graph compiler forms it (activations in the
packed ``NCHW1n16c`` layout, batch norm folded into the convolutions' bias) is built from
``compiler.strategy`` (``compute`` per node, ``schedule`` for the group) and timed against
onnxruntime running the same group as a one-node-plus-epilogue ONNX model in NCHW (Conv with
its bias, then Add/Relu; MaxPool; GlobalAveragePool; Gemm). Outputs are compared (after
unpacking). The layout transforms at the network's ends have no onnxruntime counterpart.

The sum over ResNet-18's groups (each counted as often as it occurs in the network) is printed
next to onnxruntime's whole ResNet-18 (``compiler.frontend.zoo`` when present, else built here
with ``onnx.helper``). Every peer runs one thread (``--threads``) and, with ``--cpu``, the
process is pinned to that core; times are medians of ``--repeat`` runs. Ratios above 1 mean
the compiler's code is faster.

    python -m bench.bench_graph_ops --threads 1 --repeat 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.common import cpu_model, median_time, ort_session
from isa.report import Column, format_table

#: ONNX IR version written into the models (what current onnxruntime releases accept).
ORT_IR_VERSION = 9
DEFAULT_WORKLOADS = Path(__file__).resolve().parent / "workloads" / "resnet18_conv2d.json"
BLOCK = 16


def cpu_description() -> str:
    """The CPU model (from /proc/cpuinfo where there is one) and the cores this process may use."""
    model = cpu_model()
    try:
        cores = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = list(range(os.cpu_count() or 1))
    return f"{model}; cores allowed: {cores}"


# Groups ---------------------------------------------------------------------------------------


@dataclass
class Group:
    """One fused group: how often ResNet-18 runs it, and how to build it both ways."""

    name: str
    count: int
    kind: str  # conv | maxpool | gap | dense | layout
    conv: dict = field(default_factory=dict)
    epilogue: str = ""  # "", "relu" or "add_relu"


def resnet18_groups(layers: dict[str, dict], c1_block: int) -> list[Group]:
    """The distinct fused groups of ResNet-18 (torchvision's BasicBlock topology)."""
    first = dict(layers["C1"], in_block=c1_block)
    groups = [
        Group("pack input", 1, "layout", {"c": 3, "h": 224, "block": c1_block}),
        Group("C1+b+relu", 1, "conv", first, "relu"),
        Group("maxpool", 1, "maxpool"),
    ]
    stages = [("C2", None, None, "C2"), ("C6", "C4", "C5", "C6"), ("C9", "C7", "C8", "C9")]
    stages.append(("C12", "C10", "C11", "C12"))
    for body, down3, down1, _ in stages:
        if down3 is None:
            groups.append(Group(f"{body}+b+relu", 2, "conv", layers[body], "relu"))
            groups.append(Group(f"{body}+b+add+relu", 2, "conv", layers[body], "add_relu"))
            continue
        groups.append(Group(f"{down3}+b+relu", 1, "conv", layers[down3], "relu"))
        groups.append(Group(f"{down1}+b", 1, "conv", layers[down1], ""))
        groups.append(Group(f"{body}+b+relu", 1, "conv", layers[body], "relu"))
        groups.append(Group(f"{body}+b+add+relu", 2, "conv", layers[body], "add_relu"))
    groups.append(Group("global_avg_pool", 1, "gap"))
    groups.append(Group("unpack+flatten", 1, "layout", {"c": 512, "h": 1, "block": BLOCK}))
    groups.append(Group("dense+b", 1, "dense"))
    return groups


def pack(x: np.ndarray, block: int) -> np.ndarray:
    from compiler import topi

    return topi.pack_data(x, 1, block)


def build_ours(group: Group, rng: np.random.Generator, threads: int):  # noqa: ANN201
    """(compiled function, its argument arrays, expected NCHW output, NCHW inputs for ort,
    ort model bytes or None, knobs)."""
    from compiler import te, topi
    from compiler.build import build
    from compiler.strategy import compute, schedule_group
    from compiler.targets.cpu import CpuTarget

    target = CpuTarget(num_threads=threads)

    def ph(arr: np.ndarray, name: str) -> te.Tensor:
        return te.placeholder(arr.shape, "float32", name=name)

    if group.kind == "conv":
        L = group.conv
        c, o, h, k, s, p = (L[key] for key in ("in_c", "out_c", "h", "k", "stride", "pad"))
        bi = L.get("in_block", BLOCK)
        cpad = -(-c // bi) * bi
        x = rng.standard_normal((1, c, h, h), dtype=np.float32)
        w = (rng.standard_normal((o, c, k, k), dtype=np.float32) / np.sqrt(c * k * k)).astype(
            np.float32
        )
        b = rng.standard_normal(o, dtype=np.float32) * 0.1
        xpad = np.pad(x, ((0, 0), (0, cpad - c), (0, 0), (0, 0)))
        wpad = np.pad(w, ((0, 0), (0, cpad - c), (0, 0), (0, 0)))
        xp, wp = pack(xpad, bi), topi.pack_kernel(wpad, BLOCK, bi, "OIHWio")
        bp = b.reshape(1, o // BLOCK, 1, 1, 1, BLOCK)
        X, W, B = ph(xp, "x"), ph(wp, "w"), ph(bp, "b")
        attrs = dict(
            strides=(s, s),
            padding=(p,) * 4,
            dilation=(1, 1),
            groups=1,
            data_layout=f"NCHW1n{bi}c",
            kernel_layout=f"OIHW{bi}i{BLOCK}o",
        )
        conv = compute("conv2d", [X, W], attrs, "conv")
        y = compute("add", [conv, B], {}, "bias")
        args, arrays = [X, W, B], [xp, wp, bp]
        oh = conv.shape[2]
        res = None
        if group.epilogue == "add_relu":
            res = rng.standard_normal((1, o, oh, oh), dtype=np.float32)
            R = ph(pack(res, BLOCK), "residual")
            y = compute("add", [y, R], {}, "residual_add")
            args.append(R)
            arrays.append(pack(res, BLOCK))
        if group.epilogue:
            y = compute("relu", [y], {}, "relu")
        g = schedule_group([y], conv)
        f = build(g.schedule, [*args, y], target)
        feeds = {"x": x} if res is None else {"x": x, "r": res}
        model = onnx_conv_group(w, b, x.shape, s, p, group.epilogue, res)
        return f, arrays, y.shape, feeds, model, g.knobs, True
    if group.kind == "maxpool":
        x = np.maximum(rng.standard_normal((1, 64, 112, 112), dtype=np.float32), 0)
        X = ph(pack(x, BLOCK), "x")
        attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), layout="NCHW1n16c")
        y = compute("max_pool2d", [X], attrs, "pool")
        g = schedule_group([y], y)
        model = onnx_single("MaxPool", x.shape, kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
        return (
            build(g.schedule, [X, y], target),
            [pack(x, BLOCK)],
            y.shape,
            {"x": x},
            model,
            (g.knobs),
            True,
        )
    if group.kind == "gap":
        x = rng.standard_normal((1, 512, 7, 7), dtype=np.float32)
        X = ph(pack(x, BLOCK), "x")
        y = compute("global_avg_pool2d", [X], {"layout": "NCHW1n16c"}, "gap")
        g = schedule_group([y], y)
        model = onnx_single("GlobalAveragePool", x.shape)
        return (
            build(g.schedule, [X, y], target),
            [pack(x, BLOCK)],
            y.shape,
            {"x": x},
            model,
            (g.knobs),
            True,
        )
    if group.kind == "dense":
        x = rng.standard_normal((1, 512), dtype=np.float32)
        w = rng.standard_normal((1000, 512), dtype=np.float32) / np.float32(np.sqrt(512))
        b = rng.standard_normal(1000, dtype=np.float32)
        X, Wt, B = ph(x, "x"), ph(w, "w"), ph(b, "b")
        y = compute("dense", [X, Wt, B], {}, "fc")
        g = schedule_group([y], y)
        model = onnx_gemm(w, b)
        return (
            build(g.schedule, [X, Wt, B, y], target),
            [x, w, b],
            y.shape,
            {"x": x},
            model,
            (g.knobs),
            False,
        )
    # Layout groups: pack the network input, or unpack + flatten before the classifier.
    c, h, block = group.conv["c"], group.conv["h"], group.conv["block"]
    if h == 1:
        x = rng.standard_normal((1, c, 1, 1), dtype=np.float32)
        X = ph(pack(x, block), "x")
        t = compute(
            "layout_transform", [X], {"src_layout": f"NCHW1n{block}c", "dst_layout": "NCHW"}, "lt"
        )
        y = compute("reshape", [t], {"newshape": (1, c)}, "flatten")
        arrays = [pack(x, block)]
    else:
        x = rng.standard_normal((1, c, h, h), dtype=np.float32)
        X = src = ph(x, "x")
        if c % block:  # the graph pass pads the channels to a whole block first
            widths = ((0, 0), (0, block - c % block), (0, 0), (0, 0))
            src = compute("pad", [X], {"pad_width": widths, "pad_value": 0.0}, "pad_channels")
        y = compute(
            "layout_transform", [src], {"src_layout": "NCHW", "dst_layout": f"NCHW1n{block}c"}, "lt"
        )
        arrays = [x]
    g = schedule_group([y], None)
    return build(g.schedule, [X, y], target), arrays, y.shape, None, None, g.knobs, False


# ONNX models ------------------------------------------------------------------------------------


def _model(nodes: list, inputs: list, inits: list, name: str) -> bytes:
    from onnx import TensorProto, helper

    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, name, inputs, [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ORT_IR_VERSION
    return model.SerializeToString()


def onnx_conv_group(
    w: np.ndarray,
    b: np.ndarray,
    x_shape: tuple[int, ...],
    stride: int,
    pad: int,
    epilogue: str,
    residual: np.ndarray | None,
) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    out = "y" if not epilogue else "c"
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], [out], strides=[stride] * 2, pads=[pad] * 4,
            kernel_shape=list(w.shape[2:]),
        )
    ]  # fmt: skip
    if epilogue == "add_relu":
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, list(residual.shape)))
        nodes.append(helper.make_node("Add", ["c", "r"], ["s"]))
        nodes.append(helper.make_node("Relu", ["s"], ["y"]))
    elif epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    return _model(nodes, inputs, inits, "conv_group")


def onnx_single(op: str, x_shape: tuple[int, ...], **attrs: object) -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    return _model([helper.make_node(op, ["x"], ["y"], **attrs)], [x], [], op.lower())


def onnx_gemm(w: np.ndarray, b: np.ndarray) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, w.shape[1]])
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    return _model([node], [x], inits, "gemm")


def onnx_resnet18(rng: np.random.Generator) -> tuple[bytes, str]:
    """ResNet-18 (batch 1, 224x224, batch norm folded into the convolutions' bias)."""
    try:
        from compiler.frontend.zoo import load_zoo
    except ImportError:
        pass
    else:
        model = load_zoo("resnet18", image_size=224, batch=1)
        model.ir_version = min(model.ir_version, ORT_IR_VERSION)
        return model.SerializeToString(), "compiler.frontend.zoo resnet18"
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    counter = [0]

    def conv(x: str, cin: int, cout: int, k: int, s: int, relu: bool, add: str = "") -> str:
        counter[0] += 1
        n = f"conv{counter[0]}"
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) / np.sqrt(cin * k * k)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{n}_w"))
        inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), f"{n}_b"))
        nodes.append(
            helper.make_node(
                "Conv", [x, f"{n}_w", f"{n}_b"], [n], strides=[s, s], pads=[k // 2] * 4,
                kernel_shape=[k, k],
            )
        )  # fmt: skip
        y = n
        if add:
            nodes.append(helper.make_node("Add", [y, add], [f"{n}_add"]))
            y = f"{n}_add"
        if relu:
            nodes.append(helper.make_node("Relu", [y], [f"{n}_relu"]))
            y = f"{n}_relu"
        return y

    y = conv("x", 3, 64, 7, 2, True)
    nodes.append(
        helper.make_node(
            "MaxPool", [y], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
    )
    y, cin = "pool", 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            short = y if s == 1 and cin == planes else conv(y, cin, planes, 1, s, False)
            h = conv(y, cin, planes, 3, s, True)
            y = conv(h, planes, planes, 3, 1, True, add=short)
            cin = planes
    nodes.append(helper.make_node("GlobalAveragePool", [y], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    w = rng.standard_normal((1000, 512), dtype=np.float32) / np.float32(np.sqrt(512))
    inits.append(numpy_helper.from_array(w, "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])
    return _model(nodes, [x], inits, "resnet18"), "built with onnx.helper (BN folded)"


# Main -------------------------------------------------------------------------------------------


def unpack(y: np.ndarray) -> np.ndarray:
    from compiler import topi

    return topi.unpack_data(y) if y.ndim == 6 else y


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=Path, default=DEFAULT_WORKLOADS, help="workload JSON")
    parser.add_argument("--threads", type=int, default=1, help="threads for every peer")
    parser.add_argument("--cpu", type=int, default=None, help="pin the process to this core")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per measurement")
    parser.add_argument(
        "--c1-block", type=int, default=3, choices=(3, 16),
        help="input-channel block of the first convolution (3: none padded; 16: padded)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    import onnxruntime

    layers = {e["name"]: e for e in json.loads(args.workloads.read_text())["layers"]}
    rng = np.random.default_rng(0)
    print(f"CPU: {cpu_description()}")
    print(
        f"threads={args.threads}  repeat={args.repeat} (median)  onnxruntime "
        f"{onnxruntime.__version__}  workloads: {args.workloads.name}\n"
    )
    columns = [
        Column("group"),
        Column("x", "int", "occurrences of the group in ResNet-18"),
        Column("ours ms", "float", "median time of our compiled group", digits=3),
        Column("ort ms", "float", "median time of onnxruntime on the same operators", digits=3),
        Column("ort/ours", "ratio", "onnxruntime's time over ours", digits=2),
        Column("check", legend="ours equals onnxruntime (ok), or not (MISMATCH); -: no peer"),
        Column("knobs", legend="the schedule's knobs"),
    ]
    table: list[tuple[object, ...]] = []
    total_ours = total_ort = 0.0
    ok_all = True
    compiled = []
    for group in resnet18_groups(layers, args.c1_block):
        f, arrays, out_shape, feeds, model, knobs, packed_out = build_ours(group, rng, args.threads)
        out = np.empty(out_shape, np.float32)
        # The network pass runs each occurrence on arrays of its own, as a network holds
        # distinct weights per layer.
        for _ in range(group.count):
            compiled.append((f, [a.copy() for a in arrays], np.empty_like(out)))
        t_ours = median_time(lambda f=f, arrays=arrays, out=out: f(*arrays, out), args.repeat)
        total_ours += t_ours * group.count
        if model is None:
            table.append((group.name, group.count, t_ours * 1e3, "-", "-", "-", knobs))
            continue
        sess = ort_session(model, args.threads)
        want = sess.run(None, feeds)[0]
        got = unpack(out) if packed_out else out
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-3)
        ok_all &= ok
        t_ort = median_time(lambda sess=sess, feeds=feeds: sess.run(None, feeds), args.repeat)
        total_ort += t_ort * group.count
        table.append(
            (
                group.name,
                group.count,
                t_ours * 1e3,
                t_ort * 1e3,
                t_ort / t_ours,
                "ok" if ok else "MISMATCH",
                knobs,
            )
        )
    print(format_table(columns, table))
    model, origin = onnx_resnet18(np.random.default_rng(1))
    sess = ort_session(model, args.threads)
    feed = {sess.get_inputs()[0].name: rng.standard_normal((1, 3, 224, 224), dtype=np.float32)}

    def network_pass() -> None:
        for f, arrays, out in compiled:
            f(*arrays, out)

    # The whole-network figures alternate between the two peers, so load from other processes
    # on a shared machine falls on both alike.
    pass_times, net_times = [], []
    for _ in range(2):
        network_pass()
        sess.run(None, feed)
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        network_pass()
        pass_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        sess.run(None, feed)
        net_times.append(time.perf_counter() - t0)
    t_pass, t_net = statistics.median(pass_times), statistics.median(net_times)
    print(
        f"\nsum over ResNet-18's groups (x = occurrences): ours {total_ours * 1e3:.2f} ms, "
        f"onnxruntime per group {total_ort * 1e3:.2f} ms (ort/ours {total_ort / total_ours:.2f})"
    )
    print(f"onnxruntime whole ResNet-18 ({origin}), alternating with a pass over our groups:")
    print(
        f"  ours (every group in network order) {t_pass * 1e3:.2f} ms, onnxruntime "
        f"{t_net * 1e3:.2f} ms: ort/ours = {t_net / t_pass:.2f} (ours takes "
        f"{t_pass / t_net:.2f}x its time; sum of our group medians / ort = "
        f"{total_ours / t_net:.2f}x)"
    )
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
