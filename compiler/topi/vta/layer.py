"""Whole layers for the accelerator: shapes, seeded data, compilation and the expected result.

:func:`build_conv2d` compiles one conv2d layer (NCHW shapes; channels and batch padded up to
the block sizes) with a schedule (the heuristic's knobs unless given), writes seeded random
int8 inputs and weights into the program, and computes the numpy reference. Running the program
is the caller's business (the compiler does not import the simulator).

Example:
    >>> import isa
    >>> layer = Conv2dLayer("tiny", 6, 6, 4, 8, 3, 1, 1)
    >>> built = build_conv2d(layer, isa.load_config("default"), nthreads=2)
    >>> built.program.outputs(), built.expected.shape
    (['out'], (1, 8, 6, 6))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from compiler import te
from compiler.build import lower
from compiler.passes.pipeline import PassOptions
from compiler.topi.conv2d import pack_data, pack_kernel, unpack_data
from isa import HwConfig, Program, load_config

from .conv2d import Conv2dKnobs, conv2d_packed, conv2d_shapes, schedule_conv2d_packed
from .dense import DenseKnobs, dense_packed, schedule_dense_packed
from .reference import conv2d_reference, dense_reference


@dataclass(frozen=True)
class Conv2dLayer:
    """A conv2d layer: NCHW input ``batch x in_c x h x w``, ``out_c`` square ``k x k`` filters.

    Example:
        >>> Conv2dLayer("C9", 14, 14, 256, 256, 3, 1, 1).macs
        115605504
    """

    name: str
    h: int
    w: int
    in_c: int
    out_c: int
    k: int
    stride: int = 1
    pad: int = 0
    batch: int = 1

    @property
    def out_h(self) -> int:
        return (self.h + 2 * self.pad - self.k) // self.stride + 1

    @property
    def out_w(self) -> int:
        return (self.w + 2 * self.pad - self.k) // self.stride + 1

    @property
    def macs(self) -> int:
        return self.batch * self.out_h * self.out_w * self.in_c * self.out_c * self.k * self.k

    def scaled(self, max_hw: int, max_c: int) -> Conv2dLayer:
        """The same layer kind (kernel, stride, padding, channel ratios) at a smaller size.

        Example:
            >>> Conv2dLayer("C7", 28, 28, 128, 256, 3, 2, 1).scaled(14, 64)
            Conv2dLayer(name='C7', h=14, w=14, in_c=32, out_c=64, k=3, stride=2, pad=1, batch=1)
        """
        hw = min(self.h, max_hw)
        factor = max(1, math.ceil(max(self.in_c, self.out_c) / max_c))
        in_c = self.in_c if self.in_c < 16 else max(1, self.in_c // factor)
        out_c = max(1, self.out_c // factor)
        return replace(self, h=hw, w=hw, in_c=in_c, out_c=out_c)

    def describe(self) -> str:
        return (
            f"{self.name}: {self.batch}x{self.in_c}x{self.h}x{self.w} -> {self.out_c} ch, "
            f"{self.k}x{self.k}/{self.stride} pad {self.pad}"
        )


def default_shift(reduction: int) -> int:
    """A shift that keeps requantized random int8 products mostly inside int8.

    Example:
        >>> default_shift(64 * 9)
        10
    """
    std = 5461 * math.sqrt(reduction)  # E[x^2] of uniform int8 is about 5461
    return max(0, min(31, int(math.log2(std)) - 6))


@dataclass
class BuiltLayer:
    """A compiled layer with its inputs written and the expected (unpacked) output."""

    name: str
    config: HwConfig
    program: Program
    knobs: object
    expected: np.ndarray
    trace: str
    macs: int
    output_shape: tuple[int, ...] = ()
    inputs: dict[str, np.ndarray] = field(default_factory=dict)

    def output_from(self, packed: np.ndarray) -> np.ndarray:
        """The layer's output in its natural layout from the program's packed ``out``."""
        if packed.ndim == 6:
            return unpack_data(packed)[tuple(slice(0, d) for d in self.expected.shape)]
        nb, mb, b, bo = packed.shape
        full = packed.transpose(0, 2, 1, 3).reshape(nb * b, mb * bo)
        return full[tuple(slice(0, d) for d in self.expected.shape)]

    def matches(self, packed: np.ndarray) -> bool:
        return bool(np.array_equal(self.output_from(packed), self.expected))


def _pad_to(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, a.dtype)
    out[tuple(slice(0, d) for d in a.shape)] = a
    return out


def build_conv2d(
    layer: Conv2dLayer,
    cfg: HwConfig | str,
    knobs: Conv2dKnobs | None = None,
    *,
    nthreads: int = 2,
    relu: bool = False,
    residual: bool = False,
    shift: int | None = None,
    seed: int = 0,
    options: PassOptions | None = None,
) -> BuiltLayer:
    """Compile ``layer`` for ``cfg`` with seeded random data (see the module docstring)."""
    from compiler.targets.vta import get_vta_target

    from .conv2d import find_stages
    from .heuristic import conv2d_knobs

    cfg = load_config(cfg) if isinstance(cfg, str) else cfg
    tgt = get_vta_target(cfg)
    dshape, kshape = conv2d_shapes(cfg, layer.batch, layer.in_c, layer.out_c, layer.h, layer.w,
                                   layer.k)  # fmt: skip
    if shift is None:
        shift = default_shift(layer.in_c * layer.k * layer.k)
    data = te.placeholder(dshape, "int8", name="data")
    kernel = te.placeholder(kshape, "int8", name="kernel")
    oshape = (dshape[0], kshape[0], layer.out_h, layer.out_w, cfg.batch, cfg.block_out)
    res = te.placeholder(oshape, "int8", name="residual") if residual else None
    out = conv2d_packed(data, kernel, layer.stride, layer.pad, shift=shift, relu=relu, residual=res)
    if knobs is None:
        stages = find_stages(out)
        knobs = conv2d_knobs(
            cfg, nb=dshape[0], ocb=kshape[0], icb=kshape[1], oh=layer.out_h, ow=layer.out_w,
            k=layer.k, stride=layer.stride, nthreads=nthreads,
            alu_ops=len(stages.ewise) + 1,  # the clip is a MAX and a MIN
            acc_buffers=2 if stages.res_acc is not None else 1,
        )  # fmt: skip
    s = schedule_conv2d_packed(out, knobs, cfg)
    args = [data, kernel] + ([res] if res is not None else []) + [out]
    func = lower(s, args, target=tgt, options=options)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    prog = tgt.codegen(
        func,
        layouts={
            "data": f"NCHW{b}n{bi}c",
            "kernel": f"OIHW{bo}o{bi}i",
            "residual": f"NCHW{b}n{bo}c",
            "out": f"NCHW{b}n{bo}c",
        },
        roles={"kernel": "param"},
    )
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (layer.batch, layer.in_c, layer.h, layer.w), dtype=np.int8)
    w = rng.integers(-128, 128, (layer.out_c, layer.in_c, layer.k, layer.k), dtype=np.int8)
    n_pad, c_pad, o_pad = dshape[0] * b, dshape[1] * bi, kshape[0] * bo
    inputs = {
        "data": pack_data(_pad_to(x, (n_pad, c_pad, layer.h, layer.w)), b, bi),
        "kernel": pack_kernel(_pad_to(w, (o_pad, c_pad, layer.k, layer.k)), bo, bi),
    }
    r = None
    if residual:
        r = rng.integers(-128, 128, (layer.batch, layer.out_c, layer.out_h, layer.out_w),
                         dtype=np.int8)  # fmt: skip
        inputs["residual"] = pack_data(_pad_to(r, (n_pad, o_pad, layer.out_h, layer.out_w)), b, bo)
    for name, arr in inputs.items():
        prog.write(name, arr)
    expected = conv2d_reference(
        x, w, stride=layer.stride, pad=layer.pad, shift=shift, relu=relu, residual=r
    )
    return BuiltLayer(layer.name, cfg, prog, knobs, expected, s.trace_text(), layer.macs,
                      oshape, inputs)  # fmt: skip


def build_dense(
    batch: int,
    in_features: int,
    out_features: int,
    cfg: HwConfig | str,
    knobs: DenseKnobs | None = None,
    *,
    nthreads: int = 2,
    relu: bool = False,
    residual: bool = False,
    shift: int | None = None,
    seed: int = 0,
    options: PassOptions | None = None,
) -> BuiltLayer:
    """Compile a dense layer ``(batch, in) x (out, in)^T`` for ``cfg`` with seeded data."""
    from compiler.targets.vta import get_vta_target

    from .heuristic import dense_knobs

    cfg = load_config(cfg) if isinstance(cfg, str) else cfg
    tgt = get_vta_target(cfg)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    nb, kb, mb = -(-batch // b), -(-in_features // bi), -(-out_features // bo)
    if shift is None:
        shift = default_shift(in_features)
    data = te.placeholder((nb, kb, b, bi), "int8", name="data")
    weight = te.placeholder((mb, kb, bo, bi), "int8", name="weight")
    res = te.placeholder((nb, mb, b, bo), "int8", name="residual") if residual else None
    out = dense_packed(data, weight, shift=shift, relu=relu, residual=res)
    if knobs is None:
        knobs = dense_knobs(cfg, nb=nb, mb=mb, kb=kb, nthreads=nthreads,
                            acc_buffers=2 if residual else 1)  # fmt: skip
    s = schedule_dense_packed(out, knobs, cfg)
    args = [data, weight] + ([res] if res is not None else []) + [out]
    prog = tgt.codegen(lower(s, args, target=tgt, options=options), roles={"weight": "param"})
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (batch, in_features), dtype=np.int8)
    w = rng.integers(-128, 128, (out_features, in_features), dtype=np.int8)

    def pack2(a: np.ndarray, rows: int, cols: int, rb: int, cb: int) -> np.ndarray:
        p = _pad_to(a, (rows * rb, cols * cb))
        return np.ascontiguousarray(p.reshape(rows, rb, cols, cb).transpose(0, 2, 1, 3))

    inputs = {"data": pack2(x, nb, kb, b, bi), "weight": pack2(w, mb, kb, bo, bi)}
    r = None
    if residual:
        r = rng.integers(-128, 128, (batch, out_features), dtype=np.int8)
        inputs["residual"] = pack2(r, nb, mb, b, bo)
    for name, arr in inputs.items():
        prog.write(name, arr)
    expected = dense_reference(x, w, shift=shift, relu=relu, residual=r)
    macs = batch * in_features * out_features
    return BuiltLayer("dense", cfg, prog, knobs, expected, s.trace_text(), macs,
                      (nb, mb, b, bo), inputs)  # fmt: skip
