"""Int8 elementwise groups on the accelerator: a standalone ``relu`` or ``clip``, and a ``qadd``
that no conv2d / dense group could take.

The int8 operands, in the output layout ``(N/b, C/bo, H, W, b, bo)`` (or ``(N/b, C/bo, b, bo)``
for a 2-d tensor), are loaded into the accumulator by ACC8 loads (sign-extended), the ALU
runs the node's steps in place and the out buffer's low 8 bits are stored:

* ``relu``: ``MAX 0``; ``clip``: ``MAX lo``, ``MIN hi`` (:func:`clip_steps`);
* ``qhard_sigmoid``: ``MUL m; ADD c0; SHR s; ADD c1; MAX 0; MIN hi``; ``qhard_swish``: its input
  loaded twice, that sequence on the second copy, ``MUL rhs`` (tensor-tensor), the multiplier,
  the rounding shift and the clip (:mod:`compiler.quantize.hard`);
* ``qadd``: the second operand goes to its own tile, then the quantizer's own sequence
  (:func:`compiler.quantize.add_alu_program`): ``MUL lhs``, ``MUL@rhs rhs``, ``ADD rhs``, the
  rounding shift and the clip (a multiplier of 1 is no step);
* ``qleaky_relu``: its input loaded twice, ``MIN 0`` on the first copy, ``MAX@rhs 0`` on
  the second, then the ``qadd`` sequence of the two with the slope in the first's multiplier
  (:func:`leaky_relu_steps`);
* ``qprelu`` (:mod:`compiler.quantize.fuse`): its input loaded twice; on the first copy the
  negative part (the clip), the ``qmul``'s ``MUL slope`` (a per-channel int32 tile of the
  program, written with its weights), multiplier, rounding shift and clip; ``MAX@rhs 0`` on the
  second; then the ``qadd``'s sequence of the two (:func:`prelu_steps`).

Tiles are ``tile_c`` channel blocks x ``tile_h`` rows x ``tile_w`` columns of one batch block
(whole rows before several rows, whole channel blocks before several blocks, so every DMA is
one strided block); two virtual threads take alternate tiles when there is an even number of
them, so one thread's loads overlap the other's ALU work and stores (dependency tokens).

Example:
    >>> import isa
    >>> layer = compile_qelementwise("r", isa.load_config("default"), relu_steps(),
    ...                              shape=(1, 8, 4, 4))
    >>> layer.out_shape, layer.alu_steps
    ((1, 2, 4, 4, 1, 4), 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from compiler import te, topi
from compiler.errors import ShapeError
from compiler.quantize.hard import hard_sigmoid_steps, hard_swish_steps
from compiler.quantize.ops import hard_sigmoid_params, hard_swish_params
from compiler.quantize.requant import AluStep, add_alu_program, split_round_shift
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor
from isa import HwConfig, Program

from .qnn import (
    QLayer,
    accumulator_stages,
    alu_stages,
    attach_tile,
    imm_steps,
    pack_channel_vector,
    place_in_accumulator,
    reused_program,
)

INT8_MIN, INT8_MAX = -128, 127


def relu_steps() -> list[AluStep]:
    """The ALU steps of an int8 ``relu``.

    Example:
        >>> [str(s) for s in relu_steps()]
        ['MAX 0']
    """
    return [AluStep("MAX", imm=0)]


def clip_steps(lo: int, hi: int) -> list[AluStep]:
    """The ALU steps of an int8 ``clip`` to ``[lo, hi]``: a bound at or beyond the int8 range
    is left out (the identity clip is one ``MAX -128``, a copy).

    Example:
        >>> [str(s) for s in clip_steps(-20, 100)], [str(s) for s in clip_steps(0, 127)]
        (['MAX -20', 'MIN 100'], ['MAX 0'])
    """
    if lo > hi:
        raise ShapeError(f"clip: the lower bound {lo} is above the upper bound {hi}")
    steps = [AluStep("MAX", imm=lo)] if lo > INT8_MIN else []
    if hi < INT8_MAX:
        steps.append(AluStep("MIN", imm=hi))
    return steps or [AluStep("MAX", imm=INT8_MIN)]


def qadd_steps(
    lhs_multiplier: int, rhs_multiplier: int, shift: int, out_min: int, out_max: int
) -> list[AluStep]:
    """The ALU steps of a ``qadd`` (the quantizer's :func:`add_alu_program`).

    Example:
        >>> [str(s) for s in qadd_steps(17000, 12000, 15, 0, 127)][:3]
        ['MUL 2125', 'MUL@rhs 1500', 'ADD rhs']
    """
    return add_alu_program(lhs_multiplier, rhs_multiplier, shift, out_min, out_max)


def qmul_steps(multiplier: int, shift: int, out_min: int, out_max: int) -> list[AluStep]:
    """The ALU steps of an int8 ``qmul``: the tensor-tensor ``MUL rhs``, the multiplier, the
    rounding shift and the clip (:func:`compiler.quantize.requant.mul_int`).

    Example:
        >>> [str(s) for s in qmul_steps(16384, 20, -128, 127)]
        ['MUL rhs', 'MUL 16384', 'SHR 5', 'ADD 16384', 'SHR 15', 'MAX -128', 'MIN 127']
    """
    return [
        AluStep("MUL", tensor="rhs"),
        AluStep("MUL", imm=multiplier),
        *split_round_shift(shift),
        AluStep("MAX", imm=out_min),
        AluStep("MIN", imm=out_max),
    ]


def leaky_relu_steps(attrs: Mapping[str, Any]) -> list[AluStep]:
    """The ALU steps of a ``qleaky_relu``: ``min(x, 0)`` on the data tile, ``max(x, 0)`` on
    the second copy (``rhs``), then the ``qadd``'s steps of the two (the negative part is the
    left operand, its multiplier holds the slope).

    Example:
        >>> a = {"pos_multiplier": 20000, "neg_multiplier": 2000, "shift": 15,
        ...      "out_min": -128, "out_max": 127}
        >>> [str(s) for s in leaky_relu_steps(a)]
        ['MIN 0', 'MAX@rhs 0', 'MUL 125', 'MUL@rhs 1250', 'ADD rhs', 'ADD 1024', 'SHR 11', \
'MAX -128', 'MIN 127']
    """
    return [AluStep("MIN", imm=0), *_parts_sum(attrs)]


def _parts_sum(attrs: Mapping[str, Any]) -> list[AluStep]:
    """The tail ``qleaky_relu`` and ``qprelu`` share, once their negative part is on the data
    tile: ``relu`` on the second copy (``rhs``), then the ``qadd``'s steps with the negative
    part as their left operand (the sum is the same either way)."""
    add = qadd_steps(int(attrs["neg_multiplier"]), int(attrs["pos_multiplier"]),
                     int(attrs["shift"]), int(attrs["out_min"]), int(attrs["out_max"]))  # fmt: skip
    return [AluStep("MAX", imm=0, dst="rhs"), *add]


def prelu_steps(attrs: Mapping[str, Any]) -> list[AluStep]:
    """The ALU steps of a ``qprelu`` (attributes as in :mod:`compiler.quantize.ops`): the
    negative branch on the data tile (its clip, then :func:`qmul_steps` with the tile
    ``slope`` for the second operand), ``relu`` on the second copy (``rhs``), then the
    ``qadd``'s steps with the negative branch as their left operand (the sum is the same).

    Example:
        >>> a = {"neg_min": -128, "neg_max": 0, "slope_multiplier": 16384, "slope_shift": 20,
        ...      "slope_min": -128, "slope_max": 127, "pos_multiplier": 16384,
        ...      "neg_multiplier": 16384, "shift": 14, "out_min": -128, "out_max": 127}
        >>> [str(s) for s in prelu_steps(a)]
        ['MIN 0', 'MUL slope', 'MUL 16384', 'SHR 5', 'ADD 16384', 'SHR 15', 'MAX -128', \
'MIN 127', 'MAX@rhs 0', 'ADD rhs', 'MAX -128', 'MIN 127']
    """
    neg = clip_steps(int(attrs["neg_min"]), int(attrs["neg_max"]))
    scaled = qmul_steps(int(attrs["slope_multiplier"]), int(attrs["slope_shift"]),
                        int(attrs["slope_min"]), int(attrs["slope_max"]))  # fmt: skip
    scaled[0] = AluStep("MUL", tensor="slope")
    return [*neg, *scaled, *_parts_sum(attrs)]


def prelu_slope(slope: np.ndarray) -> np.ndarray:
    """A ``qprelu``'s int8 slope constant (of a ``qmul`` gate's shape) as one int32 per
    channel, the tile its program reads; every batch row must hold the same values.

    Example:
        >>> prelu_slope(np.array([[3, -2]], np.int8)).tolist()
        [3, -2]
    """
    v = np.asarray(slope)
    if v.ndim not in (2, 4) or not (v == v[:1]).all():
        raise ShapeError(f"qprelu: the slope {v.shape} must hold one value per channel")
    return v[0].reshape(-1).astype(np.int32)


def elementwise_steps(op: str, attrs: Mapping[str, Any]) -> list[AluStep]:
    """The ALU steps of the graph operator ``op`` (``relu``, ``clip``, ``qadd``,
    ``qhard_sigmoid``, ``qhard_swish``) with ``attrs`` (a clip's bounds are clamped to int8 and
    must be whole numbers; a hard swish reads its input twice, as ``data`` and ``rhs``).

    Example:
        >>> [str(s) for s in elementwise_steps("clip", {"a_min": 0.0, "a_max": float("inf")})]
        ['MAX 0']
    """
    if op == "relu":
        return relu_steps()
    if op == "clip":
        lo = float(max(float(attrs["a_min"]), INT8_MIN))
        hi = float(min(float(attrs["a_max"]), INT8_MAX))
        if not (lo.is_integer() and hi.is_integer()):
            raise ShapeError(f"clip: bounds {attrs['a_min']}, {attrs['a_max']} must be whole")
        return clip_steps(int(lo), int(hi))
    if op == "qadd":
        return qadd_steps(
            int(attrs["lhs_multiplier"]),
            int(attrs["rhs_multiplier"]),
            int(attrs["shift"]),
            int(attrs["out_min"]),
            int(attrs["out_max"]),
        )
    if op == "qmul":
        return qmul_steps(
            int(attrs["multiplier"]),
            int(attrs["shift"]),
            int(attrs["out_min"]),
            int(attrs["out_max"]),
        )
    if op == "qprelu":
        return prelu_steps(attrs)
    if op == "qleaky_relu":
        return leaky_relu_steps(attrs)
    if op == "qhard_sigmoid":
        return hard_sigmoid_steps(hard_sigmoid_params(attrs))
    if op == "qhard_swish":
        return hard_swish_steps(hard_swish_params(attrs))
    raise ShapeError(
        f"{op}: not an elementwise operator the accelerator runs (relu, clip, qadd, qmul, "
        "qleaky_relu, qprelu, qhard_sigmoid, qhard_swish)"
    )


def elementwise_packed(
    data: Tensor,
    steps: list[AluStep],
    *,
    rhs: Tensor | None = None,
    tiles: Mapping[str, Tensor] | None = None,
    name: str = "ew",
) -> Tensor:
    """The int8 result ``out`` of ``steps`` on packed int8 ``data`` (and ``rhs``, the second
    operand of a binary node, read by the steps that name ``rhs``), computed in the
    accumulator. ``tiles``: per-channel int32 tiles ``(C/bo, b, bo)`` by the name the steps
    give them (a ``qprelu``'s ``slope``), loaded with each tile.

    Example:
        >>> x = te.placeholder((1, 2, 4, 4, 1, 4), "int8", name="x")
        >>> out = elementwise_packed(x, clip_steps(-5, 5))
        >>> out.name, out.shape, out.dtype
        ('out', (1, 2, 4, 4, 1, 4), DType('int8'))
    """
    if data.dtype.name != "int8":
        raise ShapeError(f"{name}: the operand {data.name} must be int8, got {data.dtype}")
    binary = any(s.tensor == "rhs" or s.dst == "rhs" for s in steps)
    if binary != (rhs is not None):
        raise ShapeError(f"{name}: steps naming rhs need a second operand, and only they")
    gate = (
        rhs is not None
        and len(data.shape) == 6
        and tuple(rhs.shape) == (data.shape[0], data.shape[1], 1, 1, *data.shape[4:])
    )
    if rhs is not None and ((rhs.shape != data.shape and not gate) or rhs.dtype.name != "int8"):
        raise ShapeError(
            f"{name}: the second operand must be int8 of the first's shape {data.shape} (or one "
            f"value per channel, H = W = 1), got {rhs.name}: {rhs.dtype}{list(rhs.shape)}"
        )
    if not steps:
        raise ShapeError(f"{name}: an elementwise group has at least one ALU step")
    shape = data.shape
    cur = te.compute(shape, lambda *i: data(*i).astype("int32"), name=f"{name}_lhs", tag="elemwise")
    other: Tensor | None = None
    if rhs is not None:
        other = te.compute(
            rhs.shape, lambda *i: rhs(*i).astype("int32"), name=f"{name}_rhs", tag="elemwise"
        )
    if tiles:
        if gate:
            raise ShapeError(f"{name}: per-channel tiles and a per-channel operand, not both")
        loads = {
            key: te.compute(t.shape, lambda *i, t=t: t(*i), name=f"{t.name}_acc", tag="elemwise")
            for key, t in tiles.items()
        }
        lanes = (len(shape) - 2, len(shape) - 1)  # the batch row and lane of a packed index
        cur = alu_stages(
            cur,
            steps,
            rhs=other,
            tiles=loads,
            channel=lambda i: (i[1], i[lanes[0]], i[lanes[1]]),
            prefix=f"{name}_",
        )
    elif gate:
        # one value per channel: a tile read at (n, c, 0, 0) by every pixel, as the per-channel
        # parameters of a convolution's epilogue are (source factors 0 over the pixel loops)
        assert other is not None
        if any(s.dst == "rhs" for s in steps):
            raise ShapeError(f"{name}: a per-channel second operand cannot be written")
        steps = [AluStep(s.op, s.imm, "gate" if s.tensor == "rhs" else s.tensor, s.dst)
                 for s in steps]  # fmt: skip
        cur = alu_stages(
            cur,
            steps,
            tiles={"gate": other},
            channel=lambda i: (i[0], i[1], 0, 0, i[4], i[5]),
            prefix=f"{name}_",
        )
    else:
        cur = alu_stages(cur, steps, rhs=other, prefix=f"{name}_")
    return topi.cast(cur, "int8", name="out")


@dataclass(frozen=True)
class ElementwiseTiles:
    """A tiling of a packed elementwise group: ``tile_c`` channel blocks x ``tile_h`` rows x
    ``tile_w`` columns per tile (rows and columns are 1 for a 2-d tensor), ``nthreads`` virtual
    threads over the tiles."""

    tile_c: int
    tile_h: int = 1
    tile_w: int = 1
    nthreads: int = 1

    @property
    def entries(self) -> int:
        return self.tile_c * self.tile_h * self.tile_w


def elementwise_tiles(
    cfg: HwConfig, shape: tuple[int, ...], buffers: int, nthreads: int = 2, channel_tiles: int = 0
) -> ElementwiseTiles:
    """The largest tile of the packed ``shape`` whose ``buffers`` accumulator tiles (and
    ``channel_tiles`` per-channel tiles of one entry per channel block) fit a thread's share of
    the accumulator, with ``nthreads`` (1 or 2) virtual threads when the outermost tiled axis
    splits evenly between them (one thread, with the whole buffer, otherwise).

    Example:
        >>> import isa
        >>> elementwise_tiles(isa.load_config("default"), (1, 4, 56, 56, 1, 4), 2)
        ElementwiseTiles(tile_c=1, tile_h=8, tile_w=56, nthreads=2)
    """
    from .heuristic import divisors

    nb, cb = shape[0], shape[1]
    h, w = (shape[2], shape[3]) if len(shape) == 6 else (1, 1)

    def largest_first(n: int) -> list[int]:
        return divisors(n)[::-1]

    # largest first; whole rows before part of a row, whole blocks before several blocks
    candidates = [ElementwiseTiles(tc, h, w) for tc in largest_first(cb)]
    candidates += [ElementwiseTiles(1, th, w) for th in largest_first(h)[1:]]
    candidates += [ElementwiseTiles(1, 1, tw) for tw in largest_first(w)[1:]]
    if nthreads not in (1, 2):
        raise ShapeError(f"elementwise: nthreads={nthreads} must be 1 or 2")
    for n in sorted({nthreads, 1}, reverse=True):
        for t in candidates:
            if (t.entries * buffers + t.tile_c * channel_tiles) * n > cfg.acc_depth:
                continue
            counts = [nb, cb // t.tile_c, h // t.tile_h, w // t.tile_w]
            outer = next((k for k in counts if k > 1), 1)
            if n == 1 or outer % n == 0:
                return ElementwiseTiles(t.tile_c, t.tile_h, t.tile_w, n)
    raise ShapeError(
        f"elementwise: {buffers} accumulator tiles of one entry do not fit the accumulator "
        f"buffer ({cfg.acc_depth} entries)"
    )


def schedule_elementwise_packed(out: Tensor, cfg: HwConfig, tiles: ElementwiseTiles) -> Schedule:
    """Tiles of ``tiles`` over the packed ``out``: the operands DMA'd into the accumulator at
    the tile, every ALU stage there, the tile stored; the tile loops split between
    ``tiles.nthreads`` virtual threads (the outermost tile loop with more than one tile)."""
    from compiler.errors import ScheduleError
    from compiler.schedule import create_schedule
    from compiler.targets.vta.intrin import make_scopes

    scopes = make_scopes(cfg)
    ewise, loads = accumulator_stages(out)
    shape = out.shape
    spatial = len(shape) in (6, 8)
    # an 8-d out (N/b, C/bo, H, fh, W, fw, b, bo) is a nearest resize's: the tiles count rows
    # and columns of its input, each copied fh x fw times
    rows, cols = (2, 4) if len(shape) == 8 else (2, 3)
    extents = {"tile_c": shape[1]}
    if spatial:
        extents.update(tile_h=shape[rows], tile_w=shape[cols])
    for knob, ext in extents.items():
        tile = getattr(tiles, knob)
        if tile < 1 or ext % tile:
            raise ScheduleError(f"elementwise {out.name}: {knob}={tile} must divide {ext}")
    s = create_schedule(out)
    place_in_accumulator(s, ewise, loads, scopes.acc)
    if spatial:
        ivs = list(s[out].leaf_iter_vars)
        n, c, h, w, bi, ci = ivs[0], ivs[1], ivs[rows], ivs[cols], ivs[-2], ivs[-1]
        c0, c1 = s[out].split(c, factor=tiles.tile_c)
        h0, h1 = s[out].split(h, factor=tiles.tile_h)
        w0, w1 = s[out].split(w, factor=tiles.tile_w)
        copies_h, copies_w = ([ivs[3]], [ivs[5]]) if len(shape) == 8 else ([], [])
        s[out].reorder(n, c0, h0, w0, c1, h1, *copies_h, w1, *copies_w, bi, ci)
        outer = [(n, shape[0]), (c0, shape[1] // tiles.tile_c),
                 (h0, shape[rows] // tiles.tile_h), (w0, shape[cols] // tiles.tile_w)]  # fmt: skip
        first_inner = c1
    else:
        n, c, bi, ci = s[out].leaf_iter_vars
        c0, c1 = s[out].split(c, factor=tiles.tile_c)
        s[out].reorder(n, c0, c1, bi, ci)
        outer = [(n, shape[0]), (c0, shape[1] // tiles.tile_c)]
        first_inner = c1
    at = outer[-1][0]
    if tiles.nthreads > 1:
        axis, count = next(((iv, ext) for iv, ext in outer if ext > 1), (n, 1))
        if count % tiles.nthreads:
            raise ScheduleError(
                f"elementwise {out.name}: {tiles.nthreads} virtual threads need a multiple of "
                f"{tiles.nthreads} tiles along the outermost tiled axis, there are {count}"
            )
        kept, vt = s[out].split(axis, factor=tiles.nthreads)
        if axis is at:
            at = kept
        rest = [iv for iv in s[out].leaf_iter_vars if iv is not vt]
        s[out].reorder(vt, *rest)
        s[out].bind(vt, "cthread")
    attach_tile(s, out, at, ewise, loads, store_at=first_inner)
    return s


def compile_qelementwise(
    name: str,
    cfg: HwConfig,
    steps: list[AluStep],
    *,
    shape: tuple[int, ...],
    binary: bool = False,
    rhs_shape: tuple[int, ...] | None = None,
    channel_tiles: Mapping[str, np.ndarray] | None = None,
    nthreads: int = 2,
) -> QLayer:
    """Compile ``steps`` over int8 operands of NCHW (or ``(N, C)``) ``shape`` for ``cfg``: the
    first operand is the program's ``data``, a second one (``binary``, a ``qadd``) its
    ``residual``; both in the output layout, the layout an earlier group stores. ``rhs_shape``
    ``(N, C, 1, 1)`` makes the second operand one value per channel (a squeeze-excitation's
    gate for ``qmul``), read by every pixel of its channel. ``channel_tiles``: the per-channel
    int32 values of the tiles the steps name (a ``qprelu``'s ``slope``), program symbols
    ``{name}_{key}`` written with the group's weights (the layer's ``params``). ``nthreads``
    (1 or 2) virtual threads when the tiles split evenly (:func:`elementwise_tiles`).

    Example:
        >>> import isa
        >>> layer = compile_qelementwise("a", isa.load_config("4x4x4"),
        ...                              qadd_steps(16384, 8192, 15, -128, 127),
        ...                              shape=(2, 6, 3, 3), binary=True)
        >>> sorted(layer.program.symbols), layer.out_shape
        (['data', 'out', 'residual'], (1, 2, 3, 3, 4, 4))
    """
    from compiler.build import lower
    from compiler.targets.vta import get_vta_target

    tgt = get_vta_target(cfg)
    b, bo = cfg.batch, cfg.block_out
    if len(shape) not in (2, 4):
        raise ShapeError(f"{name}: an elementwise group takes NCHW or (N, C) tensors, got {shape}")
    n, c, *hw = shape
    packed = (-(-n // b), -(-c // bo), *hw, b, bo)
    data = te.placeholder(packed, "int8", name="data")
    rhs_packed = packed
    if binary and rhs_shape is not None and tuple(rhs_shape) != tuple(shape):
        if len(shape) != 4 or tuple(rhs_shape) != (n, c, 1, 1):
            raise ShapeError(
                f"{name}: the second operand {rhs_shape} is neither {shape} nor {(n, c, 1, 1)}"
            )
        rhs_packed = (packed[0], packed[1], 1, 1, b, bo)
    rhs = te.placeholder(rhs_packed, "int8", name="residual") if binary else None
    params = {
        key: te.placeholder((packed[1], b, bo), "int32", name=f"{name}_{key}")
        for key in sorted(channel_tiles or {})
    }
    values = {
        params[key].name: pack_channel_vector(np.asarray(vec), packed[1], b, bo)
        for key, vec in (channel_tiles or {}).items()
    }
    out = elementwise_packed(data, steps, rhs=rhs, tiles=params, name=name)
    tiles = elementwise_tiles(cfg, packed, 2 if binary else 1, nthreads, len(params))

    def build() -> Program:
        s = schedule_elementwise_packed(out, cfg, tiles)
        ops = [data, *([rhs] if rhs is not None else []), out]
        layout = f"NCHW{b}n{bo}c" if len(shape) == 4 else f"NC{b}n{bo}c"
        args = [*ops[:-1], *params.values(), out]
        return tgt.codegen(
            lower(s, args, target=tgt),
            layouts={t.name: layout for t in ops},
            roles={t.name: "param" for t in params.values()},
        )

    key = ("elementwise", cfg, tuple(shape), rhs_packed, binary, tiles, tuple(steps),
           tuple(params))  # fmt: skip
    prog = reused_program(key, [t.name for t in params.values()], build)
    return QLayer(name, prog, values, tiles, 0, binary, len(steps), imm_steps(steps))


def resize_packed(data: Tensor, factors: tuple[int, int], name: str = "resize") -> Tensor:
    """A nearest resize by whole ``factors`` (rows, columns) of packed int8
    ``data (N/b, C/bo, H, W, b, bo)``: ``data`` is loaded into the accumulator (ACC8) and each
    entry copied to its ``fh x fw`` outputs by the ALU (a copy to another entry: ``MUL 0``,
    then ``ADD`` of the source). The result ``(N/b, C/bo, H, fh, W, fw, b, bo)`` holds the
    bytes of ``(N/b, C/bo, H*fh, W*fw, b, bo)`` in the same order.

    Example:
        >>> x = te.placeholder((1, 2, 3, 5, 1, 4), "int8", name="x")
        >>> resize_packed(x, (2, 2)).shape
        (1, 2, 3, 2, 5, 2, 1, 4)
    """
    if data.dtype.name != "int8" or data.ndim != 6:
        raise ShapeError(f"{name}: resizes packed int8 data, got {data.name}: {data.dtype}")
    fh, fw = factors
    if fh < 1 or fw < 1:
        raise ShapeError(f"{name}: factors {factors} must be whole numbers >= 1")
    nb, cb, h, w, b, bo = data.shape
    src = te.compute(
        data.shape, lambda *i: data(*i).astype("int32"), name=f"{name}_in", tag="elemwise"
    )
    copies = te.compute(
        (nb, cb, h, fh, w, fw, b, bo),
        lambda n, c, y, r, x, t, i, j: src[n, c, y, x, i, j],
        name=f"{name}_copy",
        tag="elemwise",
    )
    return topi.cast(copies, "int8", name="out")


def compile_qresize(
    name: str,
    cfg: HwConfig,
    *,
    shape: tuple[int, int, int, int],
    factors: tuple[int, int],
    nthreads: int = 2,
) -> QLayer:
    """Compile a nearest resize of int8 NCHW ``shape`` by whole ``factors`` (rows, columns) for
    ``cfg`` (:func:`resize_packed`): the program's ``data`` and ``out`` are in the output
    layout, ``out`` of ``(N, C, H*fh, W*fw)``. Tiles of the input (whole rows first) with their
    ``fh*fw`` copies fit a thread's share of the accumulator; two virtual threads take
    alternate tiles when they split evenly.

    Example:
        >>> import isa
        >>> layer = compile_qresize("up", isa.load_config("default"), shape=(1, 8, 3, 5),
        ...                         factors=(2, 2))
        >>> layer.out_shape
        (1, 2, 6, 10, 1, 4)
    """
    from compiler.build import lower
    from compiler.targets.vta import get_vta_target

    tgt = get_vta_target(cfg)
    b, bo = cfg.batch, cfg.block_out
    if len(shape) != 4:
        raise ShapeError(f"{name}: a resize group takes an NCHW tensor, got {shape}")
    n, c, h, w = shape
    fh, fw = factors
    packed = (-(-n // b), -(-c // bo), h, w, b, bo)
    data = te.placeholder(packed, "int8", name="data")
    out = resize_packed(data, (fh, fw), name=name)
    tiles = elementwise_tiles(cfg, packed, 1 + fh * fw, nthreads)
    s = schedule_elementwise_packed(out, cfg, tiles)
    layout = f"NCHW{b}n{bo}c"
    prog = tgt.codegen(lower(s, [data, out], target=tgt), layouts={"data": layout, "out": layout})
    # the 8-d copies are the bytes of the resized NCHW tensor in the output layout
    sym = prog.symbols["out"]
    resized = replace(sym, shape=(packed[0], packed[1], h * fh, w * fw, b, bo))
    prog = replace(prog, symbols={**prog.symbols, "out": resized})
    # per output entry: MUL 0 (an immediate) and ADD of the source entry
    return QLayer(name, prog, {}, tiles, 0, False, 2, 1)


__all__ = [
    "ElementwiseTiles",
    "clip_steps",
    "compile_qelementwise",
    "compile_qresize",
    "elementwise_packed",
    "elementwise_steps",
    "elementwise_tiles",
    "leaky_relu_steps",
    "prelu_slope",
    "prelu_steps",
    "qadd_steps",
    "qmul_steps",
    "relu_steps",
    "resize_packed",
    "schedule_elementwise_packed",
]
