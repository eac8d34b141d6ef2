"""Whole layers for the accelerator: shapes and compilation, apart from any data.

:func:`compile_conv2d` compiles one conv2d layer (NCHW shapes; channels and batch padded up to
the block sizes) with a schedule (the heuristic's knobs unless given) into a
:class:`CompiledLayer`: the program with its tensors declared (inputs, weights, output) and
zero, the knobs and the layer. :func:`compile_dense` does the same for a dense layer. Seeded
test data, packing, binding data to a program and the numpy reference are in
:mod:`compiler.topi.vta.testing`; running the program is the caller's business (the compiler
does not import the simulator).

Example:
    >>> import isa
    >>> layer = Conv2dLayer("tiny", 6, 6, 4, 8, 3, 1, 1)
    >>> compiled = compile_conv2d(layer, isa.load_config("default"), nthreads=2)
    >>> compiled.program.inputs(), compiled.program.outputs(), compiled.out_shape
    (['data'], ['out'], (1, 8, 6, 6))
    >>> int(compiled.program.read("data").any())
    0
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from compiler import te
from compiler.build import lower
from compiler.passes.pipeline import PassOptions
from compiler.te.tensor import Tensor
from compiler.topi.conv2d import unpack_data
from compiler.topi.utils import padding4, pair
from isa import HwConfig, Program, load_config

from .conv2d import Conv2dKnobs, conv2d_packed, conv2d_shapes, schedule_conv2d_packed
from .dense import DenseKnobs, dense_packed, schedule_dense_packed


@dataclass(frozen=True)
class Conv2dLayer:
    """A conv2d layer: NCHW input ``batch x in_c x h x w``, ``out_c`` filters of ``k``
    (``k x k``, or ``(rows, columns)``), ``stride`` (one for both axes, or ``(rows,
    columns)``) and ``pad`` (the same on every side, or ``(top, left, bottom, right)``).

    Example:
        >>> Conv2dLayer("C9", 14, 14, 256, 256, 3, 1, 1).macs
        115605504
        >>> lay = Conv2dLayer("rec", 8, 32, 16, 16, (3, 1), (2, 1), (1, 0, 1, 0))
        >>> lay.out_h, lay.out_w, lay.kernel, lay.strides
        (4, 32, (3, 1), (2, 1))
    """

    name: str
    h: int
    w: int
    in_c: int
    out_c: int
    k: int | tuple[int, int]
    stride: int | tuple[int, int] = 1
    pad: int | tuple[int, int, int, int] = 0
    batch: int = 1

    @property
    def kernel(self) -> tuple[int, int]:
        """The kernel's ``(rows, columns)``."""
        return pair(self.k, f"layer {self.name} kernel")

    @property
    def strides(self) -> tuple[int, int]:
        """The strides ``(along rows, along columns)``."""
        return pair(self.stride, f"layer {self.name} stride")

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """The padding ``(top, left, bottom, right)``."""
        return padding4(self.pad, f"layer {self.name} padding")

    @property
    def square(self) -> bool:
        """Whether the kernel is square with one stride and the same padding on every side."""
        (kh, kw), (sh, sw) = self.kernel, self.strides
        return kh == kw and sh == sw and len(set(self.pads)) == 1

    @property
    def out_h(self) -> int:
        pt, _, pb, _ = self.pads
        return (self.h + pt + pb - self.kernel[0]) // self.strides[0] + 1

    @property
    def out_w(self) -> int:
        _, pl, _, pr = self.pads
        return (self.w + pl + pr - self.kernel[1]) // self.strides[1] + 1

    @property
    def macs(self) -> int:
        kh, kw = self.kernel
        return self.batch * self.out_h * self.out_w * self.in_c * self.out_c * kh * kw

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
        """One line; a square kernel as ``3x3/2 pad 1``, another as ``3x1/(2, 1) pad (1, 0,
        1, 0)``."""
        if self.square:
            shape = f"{self.kernel[0]}x{self.kernel[1]}/{self.strides[0]} pad {self.pads[0]}"
        else:
            shape = f"{self.kernel[0]}x{self.kernel[1]}/{self.strides} pad {self.pads}"
        return (
            f"{self.name}: {self.batch}x{self.in_c}x{self.h}x{self.w} -> {self.out_c} ch, {shape}"
        )


def default_shift(reduction: int) -> int:
    """A shift that keeps requantized random int8 products mostly inside int8.

    Example:
        >>> default_shift(64 * 9)
        10
    """
    std = 5461 * math.sqrt(reduction)  # E[x^2] of uniform int8 is about 5461
    return max(0, min(31, int(math.log2(std)) - 6))


@dataclass(frozen=True)
class DenseLayer:
    """A dense layer: ``(batch, in_features)`` times ``(out_features, in_features)`` transposed.

    Example:
        >>> DenseLayer(1, 64, 32).macs
        2048
    """

    batch: int
    in_features: int
    out_features: int
    name: str = "dense"

    @property
    def macs(self) -> int:
        return self.batch * self.in_features * self.out_features

    def describe(self) -> str:
        return f"{self.name}: {self.batch}x{self.in_features} -> {self.out_features}"


@dataclass(frozen=True)
class CompiledLayer:
    """A compiled layer: its program (tensors declared, no data), the knobs and the layer.

    ``shift``, ``relu`` and ``residual`` are the requantize epilogue it was compiled with;
    ``packed_shape`` is the shape of the program's ``out`` tensor, ``out_shape`` the layer's
    output in its natural layout (NCHW, or ``(batch, out_features)``).
    """

    layer: Conv2dLayer | DenseLayer
    config: HwConfig
    program: Program
    knobs: Conv2dKnobs | DenseKnobs
    trace: str
    shift: int
    relu: bool = False
    residual: bool = False

    @property
    def name(self) -> str:
        return self.layer.name

    @property
    def macs(self) -> int:
        return self.layer.macs

    @property
    def packed_shape(self) -> tuple[int, ...]:
        return self.program.symbols["out"].shape

    @property
    def out_shape(self) -> tuple[int, ...]:
        if isinstance(self.layer, DenseLayer):
            return (self.layer.batch, self.layer.out_features)
        lay = self.layer
        return (lay.batch, lay.out_c, lay.out_h, lay.out_w)

    def output_from(self, packed: np.ndarray) -> np.ndarray:
        """The layer's output in its natural layout from the program's packed ``out``.

        Example:
            >>> import isa
            >>> c = compile_dense(DenseLayer(1, 16, 8), isa.load_config("default"))
            >>> c.output_from(c.program.read("out")).shape
            (1, 8)
        """
        keep = tuple(slice(0, d) for d in self.out_shape)
        if packed.ndim == 6:
            return unpack_data(packed)[keep]
        nb, mb, b, bo = packed.shape
        return packed.transpose(0, 2, 1, 3).reshape(nb * b, mb * bo)[keep]


def compile_conv2d(
    layer: Conv2dLayer,
    cfg: HwConfig | str,
    knobs: Conv2dKnobs | None = None,
    *,
    nthreads: int = 2,
    relu: bool = False,
    residual: bool = False,
    shift: int | None = None,
    options: PassOptions | None = None,
) -> CompiledLayer:
    """Compile conv2d ``layer`` for ``cfg`` (see the module docstring); no data is written.

    Example:
        >>> compile_conv2d(Conv2dLayer("t", 4, 4, 4, 4, 1), "default").knobs.nthreads
        2
    """

    def compute(data: Tensor, kernel: Tensor, shift: int, res: Tensor | None) -> Tensor:
        return conv2d_packed(
            data, kernel, layer.strides, layer.pads, shift=shift, relu=relu, residual=res
        )

    return compile_conv2d_with(
        layer, cfg, compute, knobs, nthreads=nthreads, relu=relu, residual=residual,
        shift=shift, options=options,
    )  # fmt: skip


def compile_conv2d_with(
    layer: Conv2dLayer,
    cfg: HwConfig | str,
    compute: Callable[[Tensor, Tensor, int, Tensor | None], Tensor],
    knobs: Conv2dKnobs | None = None,
    *,
    nthreads: int = 2,
    relu: bool = False,
    residual: bool = False,
    shift: int | None = None,
    options: PassOptions | None = None,
) -> CompiledLayer:
    """:func:`compile_conv2d` with the layer's tensor expression made by ``compute(data,
    kernel, shift, residual)`` (a variant of ``conv2d_packed`` that reads the same packed
    tensors, e.g. a strided input fetch); the tensors, schedule and program are the same.
    """
    from compiler.targets.vta import get_vta_target

    from .conv2d import conv2d_layouts, find_stages
    from .heuristic import conv2d_knobs

    cfg = load_config(cfg) if isinstance(cfg, str) else cfg
    tgt = get_vta_target(cfg)
    dshape, kshape = conv2d_shapes(cfg, layer.batch, layer.in_c, layer.out_c, layer.h, layer.w,
                                   layer.kernel)  # fmt: skip
    if shift is None:
        shift = default_shift(layer.in_c * layer.kernel[0] * layer.kernel[1])
    data = te.placeholder(dshape, "int8", name="data")
    kernel = te.placeholder(kshape, "int8", name="kernel")
    oshape = (dshape[0], kshape[0], layer.out_h, layer.out_w, cfg.batch, cfg.block_out)
    res = te.placeholder(oshape, "int8", name="residual") if residual else None
    out = compute(data, kernel, shift, res)
    if knobs is None:
        stages = find_stages(out)
        knobs = conv2d_knobs(
            cfg, nb=dshape[0], ocb=kshape[0], icb=kshape[1], oh=layer.out_h, ow=layer.out_w,
            k=layer.kernel, stride=layer.strides, nthreads=nthreads,
            alu_ops=len(stages.ewise) + 1,  # the clip is a MAX and a MIN
            # every step has an immediate but the residual's ADD, which reads its acc tile
            alu_imm_ops=len(stages.ewise) + 1 - int(stages.res_acc is not None),
            acc_buffers=2 if stages.res_acc is not None else 1,
        )  # fmt: skip
    s = schedule_conv2d_packed(out, knobs, cfg)
    args = [data, kernel] + ([res] if res is not None else []) + [out]
    func = lower(s, args, target=tgt, options=options)
    prog = tgt.codegen(func, layouts=conv2d_layouts(cfg), roles={"kernel": "param"})
    return CompiledLayer(layer, cfg, prog, knobs, s.trace_text(), shift, relu, residual)


def compile_dense(
    layer: DenseLayer,
    cfg: HwConfig | str,
    knobs: DenseKnobs | None = None,
    *,
    nthreads: int = 2,
    relu: bool = False,
    residual: bool = False,
    shift: int | None = None,
    options: PassOptions | None = None,
) -> CompiledLayer:
    """Compile dense ``layer`` for ``cfg`` in the packed layouts; no data is written.

    Example:
        >>> compile_dense(DenseLayer(1, 64, 32), "default").program.symbols["weight"].shape
        (8, 16, 4, 4)
    """
    from compiler.targets.vta import get_vta_target

    from .heuristic import dense_knobs

    cfg = load_config(cfg) if isinstance(cfg, str) else cfg
    tgt = get_vta_target(cfg)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    nb, kb, mb = -(-layer.batch // b), -(-layer.in_features // bi), -(-layer.out_features // bo)
    if shift is None:
        shift = default_shift(layer.in_features)
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
    return CompiledLayer(layer, cfg, prog, knobs, s.trace_text(), shift, relu, residual)
