"""Test data for the accelerator's layers, kept apart from compilation (TVM's ``topi.testing``).

:func:`layer_data` draws seeded int8 inputs, weights and (optionally) a residual in their
natural layouts and packs them for the program; :func:`bind` writes them into a copy of a
compiled layer's program; :func:`expected` is the numpy reference of the layer on them.
:func:`build_conv2d` and :func:`build_dense` do all three for tests, benchmarks and the CLI.

Example:
    >>> import isa
    >>> from compiler.topi.vta import Conv2dLayer, compile_conv2d
    >>> layer = Conv2dLayer("tiny", 6, 6, 4, 8, 3, 1, 1)
    >>> compiled = compile_conv2d(layer, isa.load_config("default"), nthreads=2)
    >>> data = layer_data(layer, compiled.config, seed=0)
    >>> prog = bind(compiled, data)
    >>> prog.outputs(), expected(compiled, data).shape
    (['out'], (1, 8, 6, 6))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler.errors import CompilerError
from compiler.passes.pipeline import PassOptions
from compiler.topi.conv2d import pack_data, pack_kernel
from isa import HwConfig, Program, load_config

from .conv2d import Conv2dKnobs
from .dense import DenseKnobs
from .layer import CompiledLayer, Conv2dLayer, DenseLayer, compile_conv2d, compile_dense
from .reference import conv2d_reference, dense_reference


@dataclass(frozen=True)
class LayerData:
    """Seeded data of a layer: ``natural`` in NCHW / ``(rows, features)``, ``packed`` in the
    program's layouts, both keyed by the program's tensor names (``data``, ``kernel`` or
    ``weight``, and ``residual`` when there is one)."""

    natural: dict[str, np.ndarray]
    packed: dict[str, np.ndarray]


def _pad_to(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, a.dtype)
    out[tuple(slice(0, d) for d in a.shape)] = a
    return out


def _pack2(a: np.ndarray, rb: int, cb: int) -> np.ndarray:
    """``(rows, cols)`` padded up to the blocks, as ``(rows/rb, cols/cb, rb, cb)``."""
    rows, cols = -(-a.shape[0] // rb), -(-a.shape[1] // cb)
    p = _pad_to(a, (rows * rb, cols * cb))
    return np.ascontiguousarray(p.reshape(rows, rb, cols, cb).transpose(0, 2, 1, 3))


def _int8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, shape, dtype=np.int8)


def layer_data(
    layer: Conv2dLayer | DenseLayer, cfg: HwConfig | str, seed: int = 0, *, residual: bool = False
) -> LayerData:
    """Seeded uniform int8 data for ``layer``, natural and packed for ``cfg``.

    Example:
        >>> d = layer_data(DenseLayer(1, 20, 8), "default", seed=1)
        >>> d.natural["weight"].shape, d.packed["weight"].shape
        ((8, 20), (2, 5, 4, 4))
    """
    cfg = load_config(cfg) if isinstance(cfg, str) else cfg
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    rng = np.random.default_rng(seed)
    if isinstance(layer, DenseLayer):
        x = _int8(rng, (layer.batch, layer.in_features))
        w = _int8(rng, (layer.out_features, layer.in_features))
        natural = {"data": x, "weight": w}
        packed = {"data": _pack2(x, b, bi), "weight": _pack2(w, bo, bi)}
        if residual:
            natural["residual"] = _int8(rng, (layer.batch, layer.out_features))
            packed["residual"] = _pack2(natural["residual"], b, bo)
        return LayerData(natural, packed)
    if not isinstance(layer, Conv2dLayer):
        raise CompilerError(f"layer_data: {type(layer).__name__} is not a conv2d or dense layer")
    x = _int8(rng, (layer.batch, layer.in_c, layer.h, layer.w))
    kh, kw = layer.kernel
    w = _int8(rng, (layer.out_c, layer.in_c, kh, kw))
    n_pad = -(-layer.batch // b) * b
    c_pad, o_pad = -(-layer.in_c // bi) * bi, -(-layer.out_c // bo) * bo
    natural = {"data": x, "kernel": w}
    packed = {
        "data": pack_data(_pad_to(x, (n_pad, c_pad, layer.h, layer.w)), b, bi),
        "kernel": pack_kernel(_pad_to(w, (o_pad, c_pad, kh, kw)), bo, bi),
    }
    if residual:
        r = _int8(rng, (layer.batch, layer.out_c, layer.out_h, layer.out_w))
        natural["residual"] = r
        packed["residual"] = pack_data(_pad_to(r, (n_pad, o_pad, layer.out_h, layer.out_w)), b, bo)
    return LayerData(natural, packed)


def bind(compiled: CompiledLayer, data: LayerData) -> Program:
    """A copy of ``compiled``'s program with ``data`` written into its tensors.

    Example:
        >>> from compiler.topi.vta import compile_dense
        >>> c = compile_dense(DenseLayer(1, 16, 16), "default")
        >>> bind(c, layer_data(c.layer, c.config)).read("weight").any()
        np.True_
    """
    declared = set(compiled.program.inputs()) | {
        n for n, s in compiled.program.symbols.items() if s.role == "param"
    }
    if set(data.packed) != declared:
        raise CompilerError(
            f"layer {compiled.name}: data for {sorted(data.packed)}, but the program takes "
            f"{sorted(declared)}"
        )
    prog = compiled.program.copy()
    for name, arr in data.packed.items():
        prog.write(name, arr)
    return prog


def expected(compiled: CompiledLayer, data: LayerData) -> np.ndarray:
    """The numpy reference of ``compiled``'s layer on ``data`` (natural layout, int8).

    Example:
        >>> from compiler.topi.vta import compile_dense
        >>> c = compile_dense(DenseLayer(2, 16, 8), "default", relu=True)
        >>> int(expected(c, layer_data(c.layer, c.config)).min())
        0
    """
    nat = data.natural
    shift, relu, res = compiled.shift, compiled.relu, nat.get("residual")
    lay = compiled.layer
    if isinstance(lay, DenseLayer):
        return dense_reference(nat["data"], nat["weight"], shift=shift, relu=relu, residual=res)
    return conv2d_reference(nat["data"], nat["kernel"], stride=lay.strides, pad=lay.pads,
                            shift=shift, relu=relu, residual=res)  # fmt: skip


@dataclass
class BuiltLayer:
    """A compiled layer with its inputs written and the expected (unpacked) output."""

    compiled: CompiledLayer
    program: Program
    data: LayerData
    expected: np.ndarray
    inputs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.compiled.name

    @property
    def config(self) -> HwConfig:
        return self.compiled.config

    @property
    def knobs(self) -> Conv2dKnobs | DenseKnobs:
        return self.compiled.knobs

    @property
    def trace(self) -> str:
        return self.compiled.trace

    @property
    def macs(self) -> int:
        return self.compiled.macs

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.compiled.packed_shape

    def output_from(self, packed: np.ndarray) -> np.ndarray:
        """The layer's output in its natural layout from the program's packed ``out``."""
        return self.compiled.output_from(packed)

    def matches(self, packed: np.ndarray) -> bool:
        return bool(np.array_equal(self.output_from(packed), self.expected))


def build(compiled: CompiledLayer, seed: int = 0) -> BuiltLayer:
    """``compiled`` with seeded data bound and its expected output.

    Example:
        >>> from compiler.topi.vta import compile_dense
        >>> build(compile_dense(DenseLayer(1, 16, 8), "default"), seed=2).expected.shape
        (1, 8)
    """
    data = layer_data(compiled.layer, compiled.config, seed, residual=compiled.residual)
    return BuiltLayer(compiled, bind(compiled, data), data, expected(compiled, data),
                      dict(data.packed))  # fmt: skip


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
    """Compile conv2d ``layer`` (:func:`~compiler.topi.vta.compile_conv2d`), bind seeded data
    and compute the expected output.

    Example:
        >>> build_conv2d(Conv2dLayer("t", 4, 4, 4, 4, 1), "default").knobs.nthreads
        2
    """
    compiled = compile_conv2d(layer, cfg, knobs, nthreads=nthreads, relu=relu,
                              residual=residual, shift=shift, options=options)  # fmt: skip
    return build(compiled, seed)


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
    """Compile a dense layer ``(batch, in) x (out, in)^T`` (:func:`compile_dense`), bind
    seeded data and compute the expected output.

    Example:
        >>> build_dense(1, 32, 16, "default", relu=True).expected.shape
        (1, 16)
    """
    compiled = compile_dense(DenseLayer(batch, in_features, out_features), cfg, knobs,
                             nthreads=nthreads, relu=relu, residual=residual, shift=shift,
                             options=options)  # fmt: skip
    return build(compiled, seed)
