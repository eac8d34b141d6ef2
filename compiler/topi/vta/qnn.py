"""Quantized conv2d and dense groups on the accelerator: int32 bias, the quantizer's
requantization sequence on the ALU and an optional fused ``qadd``.

A group of the quantized graph ``conv2d (int8, int32 bias) -> requantize [-> qadd]`` (or the
same with ``dense``) becomes one program. After the GEMM the accumulator tile runs the ALU steps
of :func:`compiler.quantize.alu_program` (``docs/quantization.md``): a parameter that differs
between output channels is an int32 tile (one accumulator entry per channel block, LOAD ACC
once per output tile) read through the tensor-tensor form, so one tile serves every pixel; a
shared one is an immediate. The bias is the first tensor ADD (the rounding offset of the
pre-shift is folded into it when both are tiles: int32 addition wraps, so the sum is the same).
A fused ``qadd`` loads the other operand with an ACC8 load, multiplies both by their
multipliers, adds them, shifts with rounding and clips.

Example:
    >>> import numpy as np
    >>> from compiler.quantize import choose_requant
    >>> ep = QEpilogue(np.arange(8, dtype=np.int32), choose_requant(np.full(8, 0.01)), 0, 127)
    >>> [str(s) for s in ep.steps()][:3]
    ['ADD bias', 'MAX -32768', 'MIN 32767']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler import te, topi
from compiler.errors import ScheduleError, ShapeError
from compiler.ir import op
from compiler.ir.buffer import Scope
from compiler.ir.expr import Expr
from compiler.quantize.hard import HardSwish, hard_swish_steps
from compiler.quantize.requant import (
    CLAMP_MAX,
    CLAMP_MIN,
    COPY,
    AluStep,
    RequantParams,
    add_alu_program,
    alu_program,
    alu_uops,
    channel_tile_names,
    second_tile,
    wrap32,
)
from compiler.schedule import Schedule
from compiler.te.tensor import ComputeOp, IterVar, PlaceholderOp, Tensor
from isa import HwConfig, Program

if TYPE_CHECKING:
    from .conv2d import Conv2dKnobs
    from .dense import DenseKnobs

_ALU_OPS: dict[str, Callable[[Expr, Expr], Expr]] = {
    "ADD": op.add,
    "MUL": op.mul,
    "MIN": op.minimum,
    "MAX": op.maximum,
    "SHR": op.shift_right,
}


@dataclass(frozen=True)
class QAdd:
    """A ``qadd`` fused after the requantization: ``self_multiplier`` scales the group's own
    result, ``other_multiplier`` the other operand (an int8 tensor of the output's shape).

    Example:
        >>> [str(s) for s in QAdd(17000, 12000, 15, 0, 127).steps()][:2]
        ['MUL 2125', 'MUL@rhs 1500']
    """

    self_multiplier: int
    other_multiplier: int
    shift: int
    out_min: int
    out_max: int

    def steps(self) -> list[AluStep]:
        """The quantizer's ``qadd`` sequence (:func:`compiler.quantize.add_alu_program`)."""
        return add_alu_program(
            self.self_multiplier, self.other_multiplier, self.shift, self.out_min, self.out_max
        )


@dataclass(frozen=True)
class QEpilogue:
    """What follows the GEMM in a quantized group: ``bias`` (int32 per output channel, or
    None), the per-channel requantization ``requant`` clipped to ``[out_min, out_max]``, and an
    optional fused :class:`QAdd`."""

    bias: np.ndarray | None
    requant: RequantParams
    out_min: int
    out_max: int
    add: QAdd | None = None
    #: a hard swish fused after the requantization (``qhard_swish``: its gate on a copy of
    #: the requantized tile), never with ``add``
    post: HardSwish | None = None

    @property
    def channels(self) -> int:
        return int(np.asarray(self.requant.multiplier).size)

    def tiles(self) -> dict[str, np.ndarray]:
        """The per-channel int32 vectors the steps read, by name (int32 of ``channels``).

        Example:
            >>> from compiler.quantize import choose_requant
            >>> p = choose_requant(np.array([0.01, 0.003]))
            >>> sorted(QEpilogue(np.array([5, 7], np.int32), p, -128, 127).tiles())
            ['bias', 'multiplier', 'shift']
        """
        p = self.requant
        s1 = np.asarray(p.shift, np.int64)
        s2 = np.asarray(p.post_shift, np.int64)
        values = {
            "round": np.where(s1 > 0, np.left_shift(1, np.maximum(s1 - 1, 0)), 0),
            "shift": s1,
            "multiplier": np.asarray(p.multiplier, np.int64),
            "post_round": np.where(s2 > 0, np.left_shift(1, np.maximum(s2 - 1, 0)), 0),
            "post_shift": s2,
        }
        out: dict[str, np.ndarray] = {}
        for name in channel_tile_names(self.steps()):
            if name == "bias":
                out["bias"] = self._bias_tile()
            else:
                out[name] = values[name].astype(np.int32)
        return out

    def _fold_round(self) -> bool:
        """Whether the pre-shift's rounding ``ADD`` (a tile or an immediate) joins the bias: the
        program's first step is that ``ADD`` exactly when some channel has a pre-shift."""
        steps = alu_program(self.requant, self.out_min, self.out_max)
        pre_shift = bool(np.any(np.asarray(self.requant.shift) > 0))
        return self.bias is not None and bool(steps) and steps[0].op == "ADD" and pre_shift

    def _bias_tile(self) -> np.ndarray:
        """The int32 bias per channel, with the pre-shift's rounding offset when it is folded."""
        assert self.bias is not None
        extra: np.ndarray | int = 0
        if self._fold_round():
            s1 = np.asarray(self.requant.shift, np.int64)
            extra = np.where(s1 > 0, np.left_shift(1, np.maximum(s1 - 1, 0)), 0)
        return wrap32(np.asarray(self.bias, np.int64) + extra).astype(np.int32)

    def steps(self) -> list[AluStep]:
        """The ALU steps after the GEMM, in order (tensor operands named as in :meth:`tiles`).

        The bias takes in the pre-shift's rounding offset (int32 addition wraps the same in one
        step as in two). A bias that every channel shares is then an immediate ADD, or no step
        at all when it is 0: an immediate-operand micro-op issues every ``alu_imm_ii`` cycles,
        a tile-operand one every ``alu_ii``.

        Example:
            >>> from compiler.quantize import choose_requant
            >>> p = choose_requant(np.full(4, 2.0**-7), mode="shift")
            >>> [str(s) for s in QEpilogue(np.full(4, 36, np.int32), p, 0, 127).steps()]
            ['ADD 100', 'SHR 7', 'MAX 0', 'MIN 127']
            >>> [str(s) for s in QEpilogue(np.array([1, 2, 3, 4], np.int32), p, 0, 127).steps()]
            ['ADD bias', 'SHR 7', 'MAX 0', 'MIN 127']
        """
        steps = alu_program(self.requant, self.out_min, self.out_max)
        if self.bias is not None:
            if self._fold_round():
                steps = steps[1:]
            shared = set(self._bias_tile().tolist()) if self.channels else {0}
            value = shared.pop() if len(shared) == 1 else None
            if value is None or not CLAMP_MIN <= value <= CLAMP_MAX:
                steps = [AluStep("ADD", tensor="bias"), *steps]
            elif value != 0:
                steps = [AluStep("ADD", imm=value), *steps]
        if self.add is not None:
            steps += self.add.steps()
        if self.post is not None:
            steps += [COPY, *hard_swish_steps(self.post)]
        return steps


def pack_channel_vector(v: np.ndarray, blocks: int, batch: int, block: int) -> np.ndarray:
    """A per-channel vector as ``(blocks, batch, block)`` int32 tiles (rows repeat it)."""
    padded = np.zeros(blocks * block, np.int32)
    padded[: v.size] = v
    return np.broadcast_to(padded.reshape(blocks, 1, block), (blocks, batch, block)).copy()


def epilogue_tensors(
    ep: QEpilogue, blocks: int, batch: int, block: int, name: str
) -> tuple[dict[str, Tensor], dict[str, np.ndarray]]:
    """Placeholders ``{name}_{tile}`` of the per-channel tiles and their packed values.

    Example:
        >>> from compiler.quantize import choose_requant
        >>> ep = QEpilogue(np.arange(6, dtype=np.int32), choose_requant(np.full(6, 0.01)), 0, 9)
        >>> ph, values = epilogue_tensors(ep, 2, 1, 4, "c")
        >>> ph["bias"].name, values["c_bias"].shape, values["c_bias"][1, 0].tolist()
        ('c_bias', (2, 1, 4), [4, 5, 0, 0])
    """
    placeholders: dict[str, Tensor] = {}
    values: dict[str, np.ndarray] = {}
    for key, vec in ep.tiles().items():
        t = te.placeholder((blocks, batch, block), "int32", name=f"{name}_{key}")
        placeholders[key] = t
        values[t.name] = pack_channel_vector(vec, blocks, batch, block)
    return placeholders, values


def alu_stages(
    acc: Tensor,
    steps: Sequence[AluStep],
    *,
    rhs: Tensor | None = None,
    tiles: Mapping[str, Tensor] | None = None,
    channel: Callable[[Sequence[Expr]], tuple[Expr | int, ...]] | None = None,
    prefix: str = "",
) -> Tensor:
    """``steps`` as accumulator stages on the int32 ``acc`` (one stage a step, named
    ``{prefix}q{k}``): an immediate, the second operand ``rhs`` (a step whose ``dst`` is
    ``rhs`` updates that operand instead, ``{prefix}rhs{k}``; a ``COPY`` makes it a copy of the
    value so far) or a per-channel tile of ``tiles`` read at ``channel(index)``. Returns the
    last stage (``acc`` without steps)."""
    cur = acc
    for k, step in enumerate(steps):
        if step == COPY:  # the second tile starts as a copy of the value so far
            rhs = te.compute(acc.shape, lambda *i, c=cur: c(*i), name=f"{prefix}rhs{k}",
                             tag="elemwise")  # fmt: skip
            continue
        fn = _ALU_OPS[step.op]
        if step.dst == "rhs":
            assert rhs is not None and step.imm is not None
            rhs = te.compute(
                acc.shape,
                lambda *i, s=rhs, v=step.imm, f=fn: f(s(*i), v),
                name=f"{prefix}rhs{k}",
                tag="elemwise",
            )
            continue
        if step.tensor == "rhs":
            assert rhs is not None
            cur = te.compute(
                acc.shape,
                lambda *i, c=cur, o=rhs, f=fn: f(c(*i), o(*i)),
                name=f"{prefix}q{k}",
                tag="elemwise",
            )
        elif step.tensor is not None:
            if tiles is None or channel is None or step.tensor not in tiles:
                raise ShapeError(f"{acc.name}: step {step} reads a tile this group has not")
            cur = te.compute(
                acc.shape,
                lambda *i, c=cur, t=tiles[step.tensor], f=fn: f(c(*i), t(*channel(i))),
                name=f"{prefix}q{k}",
                tag="elemwise",
            )
        else:
            assert step.imm is not None
            cur = te.compute(
                acc.shape,
                lambda *i, c=cur, v=step.imm, f=fn: f(c(*i), v),
                name=f"{prefix}q{k}",
                tag="elemwise",
            )
    return cur


def apply_epilogue(
    acc: Tensor,
    ep: QEpilogue,
    tiles: dict[str, Tensor],
    channel: Callable[[Sequence[Expr]], tuple[Expr, Expr, Expr]],
    residual: Tensor | None = None,
) -> Tensor:
    """The ALU stages of ``ep`` on the int32 accumulator ``acc``, then the int8 cast ``out``.

    ``channel(index)`` maps an output index to the index of a per-channel tile
    ``(block, batch row, lane)``. ``residual`` is the other operand of a fused ``qadd``.
    """
    if acc.dtype.name != "int32":
        raise ShapeError(
            f"the epilogue requantizes an int32 accumulator, {acc.name} is {acc.dtype}"
        )
    if (ep.add is None) != (residual is None):
        raise ShapeError(f"{acc.name}: a fused qadd needs its other operand, and only it")
    loads = {
        key: te.compute(t.shape, lambda *i, t=t: t(*i), name=f"{t.name}_acc", tag="elemwise")
        for key, t in tiles.items()
    }
    rhs: Tensor | None = None
    if residual is not None:
        if residual.shape != acc.shape or residual.dtype.name != "int8":
            raise ShapeError(
                f"{acc.name}: the qadd operand must be int8 of the output's shape {acc.shape}, "
                f"got {residual.name}: {residual.dtype}{list(residual.shape)}"
            )
        rhs = te.compute(
            acc.shape, lambda *i: residual(*i).astype("int32"), name="res_acc", tag="elemwise"
        )
    cur = alu_stages(acc, ep.steps(), rhs=rhs, tiles=loads, channel=channel)
    if cur is acc:
        raise ShapeError(f"{acc.name}: a quantized epilogue has at least the clip")
    return topi.cast(cur, "int8", name="out")


def qconv2d_packed(
    data: Tensor,
    kernel: Tensor,
    ep: QEpilogue,
    tiles: dict[str, Tensor],
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, ...] = 0,
    *,
    groups: int = 1,
    residual: Tensor | None = None,
    name: str = "conv",
) -> Tensor:
    """Packed int8 conv2d followed by the quantized epilogue ``ep`` (see the module docstring).
    ``groups`` > 1 is a grouped convolution over whole channel blocks (a depthwise one runs as
    ``groups`` = channel blocks with block-diagonal weight tiles, :func:`depthwise_kernel`).

    Example:
        >>> from compiler.quantize import choose_requant
        >>> x = te.placeholder((1, 1, 4, 4, 1, 4), "int8", name="x")
        >>> w = te.placeholder((2, 1, 3, 3, 4, 4), "int8", name="w")
        >>> ep = QEpilogue(np.ones(8, np.int32), choose_requant(np.full(8, 0.01)), 0, 127)
        >>> tiles, _ = epilogue_tensors(ep, 2, 1, 4, "conv")
        >>> qconv2d_packed(x, w, ep, tiles, padding=1).shape
        (1, 2, 4, 4, 1, 4)
    """
    if data.dtype.name != "int8" or kernel.dtype.name != "int8":
        raise ShapeError(f"{name}: the accelerator convolves int8 data and weights")
    conv = topi.conv2d_nchwc(
        data, kernel, stride, padding, groups=groups, out_dtype="int32", name=name
    )
    return apply_epilogue(conv, ep, tiles, lambda i: (i[1], i[4], i[5]), residual)


def depthwise_kernel(weight: np.ndarray, block: int) -> np.ndarray:
    """A depthwise OIHW ``(C, 1, KH, KW)`` kernel as the grouped kernel
    ``(ceil(C / block) * block, block, KH, KW)`` of one group per channel block: channel ``c``'s
    taps sit at input lane ``c % block``, every other lane is zero, so each packed weight tile
    is diagonal and the GEMM core's lane ``j`` multiplies input channel ``j`` of the block alone.

    Example:
        >>> w = np.arange(1, 7, dtype=np.int8).reshape(6, 1, 1, 1)
        >>> depthwise_kernel(w, 4)[:, :, 0, 0].tolist()[4:]
        [[5, 0, 0, 0], [0, 6, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    """
    c, one, kh, kw = weight.shape
    if one != 1:
        raise ShapeError(f"depthwise kernel must be (C, 1, KH, KW), got {weight.shape}")
    out = np.zeros((-(-c // block) * block, block, kh, kw), weight.dtype)
    out[np.arange(c), np.arange(c) % block] = weight[:, 0]
    return out


def qdense_packed(
    data: Tensor,
    weight: Tensor,
    ep: QEpilogue,
    tiles: dict[str, Tensor],
    *,
    residual: Tensor | None = None,
    name: str = "dense",
) -> Tensor:
    """Packed int8 dense followed by the quantized epilogue ``ep``.

    Example:
        >>> from compiler.quantize import choose_requant
        >>> x = te.placeholder((1, 2, 1, 4), "int8", name="x")
        >>> w = te.placeholder((3, 2, 4, 4), "int8", name="w")
        >>> ep = QEpilogue(None, choose_requant(np.full(12, 0.01)), -128, 127)
        >>> tiles, _ = epilogue_tensors(ep, 3, 1, 4, "fc")
        >>> qdense_packed(x, w, ep, tiles).shape
        (1, 3, 1, 4)
    """
    from .dense import dense_packed

    # dense_packed's own epilogue is an identity shift; the quantized one replaces it
    body = dense_packed(data, weight, name=name)
    acc = _find_tag(body, "dense_packed")
    return apply_epilogue(acc, ep, tiles, lambda i: (i[1], i[2], i[3]), residual)


@dataclass(frozen=True)
class QLayer:
    """A compiled quantized group: its program, the per-channel tiles and weights to write into
    it (``params``, packed), the knobs it was scheduled with and the packed output shape."""

    name: str
    program: Program
    params: dict[str, np.ndarray]
    knobs: object
    macs: int
    residual: bool
    alu_steps: int  # ALU instructions of the epilogue per accumulator entry
    alu_imm_steps: int = 0  # how many of them have an immediate operand (at alu_imm_ii)
    #: why the knobs asked for were not used (they failed to compile; ``knobs`` are then the
    #: heuristic's), empty when they were or none were asked for
    fallback: str = ""

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.program.symbols["out"].shape)


#: The programs compiled while :func:`reusing_programs` is open, by everything their instructions
#: depend on (not the group's name): the name that compiled one, its tiles' symbols, a copy.
_PROGRAMS: dict[tuple[Any, ...], tuple[tuple[str, ...], Program]] = {}
_REUSING = [0]


@contextmanager
def reusing_programs() -> Iterator[None]:
    """While open, a group whose program an earlier group of the same structure already
    compiled (the same kind, shapes, strides, padding, knobs and epilogue steps: only its
    weights and per-channel tiles differ, and they are written into the program later, as
    ``params``) gets a copy of that program with its own tile symbols, without lowering and
    code generation again. A network repeats its blocks: YOLOX's 83 convolution groups are 39
    programs. The copies are byte for byte what a compile gives (the names of the group and
    its tiles reach nothing but the symbol table).

    Example:
        >>> import isa
        >>> from compiler.quantize import choose_requant
        >>> ep = QEpilogue(np.arange(8, dtype=np.int32), choose_requant(np.full(8, 0.01)), 0, 9)
        >>> def conv(name):
        ...     return compile_qconv2d(name, isa.load_config("default"), np.ones((8, 3, 3, 3),
        ...         np.int8), ep, in_shape=(1, 3, 6, 6), stride=(1, 1), padding=(1, 1, 1, 1))
        >>> with reusing_programs():
        ...     a, b = conv("a"), conv("b")
        >>> sorted(b.program.symbols), bool((a.program.dram == b.program.dram).all())
        (['b_bias', 'data', 'kernel', 'out'], True)
    """
    _REUSING[0] += 1
    try:
        yield
    finally:
        _REUSING[0] -= 1
        if not _REUSING[0]:
            _PROGRAMS.clear()


def reuse_programs_from_now() -> None:
    """Open :func:`reusing_programs` for the rest of this process (a compile worker's)."""
    _REUSING[0] = max(_REUSING[0], 1)


def reused_program(
    key: tuple[Any, ...], tiles: Sequence[str], build: Callable[[], Program]
) -> Program:
    """``build()``, or a copy of the program an earlier group of key ``key`` built, its tile
    symbols renamed to ``tiles`` (see :func:`reusing_programs`)."""
    if not _REUSING[0]:
        return build()
    hit = _PROGRAMS.get(key)
    if hit is None:
        prog = build()
        _PROGRAMS[key] = (tuple(tiles), _copy_program(prog, {}))
        return prog
    names, prog = hit
    return _copy_program(prog, dict(zip(names, tiles, strict=True)))


def _copy_program(prog: Program, renames: Mapping[str, str]) -> Program:
    symbols = {}
    for key, sym in prog.symbols.items():
        new = renames.get(key, key)
        symbols[new] = sym if new == key else dataclasses.replace(sym, name=new)
    return dataclasses.replace(prog, dram=prog.dram.copy(), symbols=symbols)


def imm_steps(steps: Sequence[AluStep]) -> int:
    """How many of ``steps`` have an immediate operand (they issue every ``alu_imm_ii``).

    Example:
        >>> imm_steps([AluStep("ADD", tensor="bias"), AluStep("SHR", imm=8)])
        1
    """
    return sum(1 for s in steps if s.tensor is None)


def compile_qconv2d(
    name: str,
    cfg: HwConfig,
    weight: np.ndarray,
    ep: QEpilogue,
    *,
    in_shape: tuple[int, int, int, int],
    stride: tuple[int, int],
    padding: tuple[int, int, int, int],
    residual: bool = False,
    nthreads: int = 2,
    depthwise: bool = False,
    knobs: Conv2dKnobs | None = None,
) -> QLayer:
    """Compile a quantized conv2d group for ``cfg``: NCHW ``in_shape``, OIHW int8 ``weight``
    of any ``KH x KW`` window, ``stride`` ``(rows, columns)`` and ``padding`` ``(top, left,
    bottom, right)``.

    ``knobs``: the schedule (a tuned point); None: the heuristic's for ``nthreads``
    (:func:`~compiler.topi.vta.heuristic.quantized_conv2d_knobs`). Given knobs are checked
    against the layer's axes and ``cfg``'s buffers; a bad point raises a ScheduleError naming
    the group and the knob. Knobs change the program's schedule, never its results.

    ``depthwise``: ``weight`` is ``(C, 1, KH, KW)``, one filter per channel; it runs on the
    GEMM core as a grouped convolution of one group per channel block whose weight tiles are
    diagonal (:func:`depthwise_kernel`), so the reduction is one input block per output block
    instead of all of them (``block_in`` times the MACs of the layer, where a dense
    convolution over the zero blocks would be ``C`` times). Needs ``block_in == block_out``.

    Example:
        >>> import isa
        >>> from compiler.quantize import choose_requant
        >>> w = np.ones((8, 3, 3, 3), np.int8)
        >>> ep = QEpilogue(np.arange(8, dtype=np.int32), choose_requant(np.full(8, 0.01)), 0, 127)
        >>> layer = compile_qconv2d("c", isa.load_config("default"), w, ep, in_shape=(1, 3, 6, 6),
        ...                         stride=(1, 1), padding=(1, 1, 1, 1))
        >>> layer.out_shape, sorted(layer.params)
        ((1, 2, 6, 6, 1, 4), ['c_bias', 'kernel'])
    """
    from compiler.build import lower
    from compiler.targets.vta import get_vta_target

    from .conv2d import check_knobs, conv2d_layouts, find_stages, schedule_conv2d_packed
    from .heuristic import conv2d_misfit, epilogue_channel_tiles, quantized_conv2d_knobs
    from .packing import pack_kernel

    tgt = get_vta_target(cfg)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    n, c, h, w = in_shape
    o, c2, kh, kw = weight.shape
    if depthwise:
        if o != c or c2 != 1 or bi != bo:
            raise ShapeError(
                f"depthwise conv2d {name}: needs a (C, 1, KH, KW) kernel for C={c} channels and "
                f"block_in == block_out, got kernel {weight.shape}, blocks {bi}x{bo}"
            )
    elif c2 != c:
        raise ShapeError(
            f"conv2d {name}: the accelerator runs one group over every input channel, got "
            f"kernel {weight.shape} for input {in_shape}"
        )
    nb, cb, ob = -(-n // b), -(-c // bi), -(-o // bo)
    # a depthwise kernel reduces over the one input block of its group
    kcb, groups = (1, cb) if depthwise else (cb, 1)
    data = te.placeholder((nb, cb, h, w, b, bi), "int8", name="data")
    kernel = te.placeholder((ob, kcb, kh, kw, bo, bi), "int8", name="kernel")
    tiles, values = epilogue_tensors(ep, ob, b, bo, name)
    out_h = (h + padding[0] + padding[2] - kh) // stride[0] + 1
    out_w = (w + padding[1] + padding[3] - kw) // stride[1] + 1
    oshape = (nb, ob, out_h, out_w, b, bo)
    res = te.placeholder(oshape, "int8", name="residual") if residual else None
    out = qconv2d_packed(
        data, kernel, ep, tiles, stride, padding, groups=groups, residual=res, name=name
    )
    steps = ep.steps()
    if knobs is None:
        knobs = quantized_conv2d_knobs(
            cfg, nb=nb, ocb=ob, icb=kcb, oh=out_h, ow=out_w, k=(kh, kw), stride=stride,
            steps=steps, residual=residual, depthwise=depthwise, nthreads=nthreads,
        )  # fmt: skip
    else:
        _tuned("conv2d", name, lambda: check_knobs(find_stages(out), knobs, cfg))
        misfit = conv2d_misfit(
            cfg, knobs, nb=nb, ocb=ob, icb=kcb, oh=out_h, ow=out_w, k=(kh, kw), stride=stride,
            acc_buffers=2 if second_tile(steps) else 1,
            channel_tiles=epilogue_channel_tiles(steps), depthwise=depthwise,
        )  # fmt: skip
        if misfit is not None:
            raise ScheduleError(f"conv2d group {name}: {misfit} on {cfg.name}")
    tuned = knobs

    def build() -> Program:
        s = schedule_conv2d_packed(out, tuned, cfg)
        args = [data, kernel, *tiles.values(), *([res] if res is not None else []), out]
        func = lower(s, args, target=tgt)
        return tgt.codegen(
            func,
            layouts=conv2d_layouts(cfg),
            roles={"kernel": "param", **{t.name: "param" for t in tiles.values()}},
        )

    key = ("conv2d", cfg, in_shape, weight.shape, stride, padding, residual, depthwise, knobs,
           tuple(steps), tuple(tiles))  # fmt: skip
    prog = reused_program(key, [t.name for t in tiles.values()], build)
    values["kernel"] = pack_kernel(depthwise_kernel(weight, bi) if depthwise else weight, cfg)
    macs = n * o * out_h * out_w * c2 * kh * kw
    return QLayer(name, prog, values, knobs, macs, residual, *alu_uops(steps))


def compile_qdense(
    name: str,
    cfg: HwConfig,
    weight: np.ndarray,
    ep: QEpilogue,
    *,
    batch: int,
    residual: bool = False,
    nthreads: int = 2,
    knobs: DenseKnobs | None = None,
) -> QLayer:
    """Compile a quantized dense group for ``cfg``: ``weight`` int8 ``(M, K)``.

    ``knobs``: the schedule (a tuned point, checked as :func:`compile_qconv2d` checks its);
    None: the heuristic's (:func:`~compiler.topi.vta.heuristic.quantized_dense_knobs`).

    Example:
        >>> import isa
        >>> from compiler.quantize import choose_requant
        >>> ep = QEpilogue(None, choose_requant(np.full(10, 0.01)), -128, 127)
        >>> layer = compile_qdense("fc", isa.load_config("default"), np.ones((10, 32), np.int8),
        ...                        ep, batch=1)
        >>> layer.out_shape
        (1, 3, 1, 4)
    """
    from compiler.build import lower
    from compiler.targets.vta import get_vta_target

    from .dense import schedule_dense_packed
    from .heuristic import dense_misfit, epilogue_channel_tiles, quantized_dense_knobs
    from .packing import pack_weight

    tgt = get_vta_target(cfg)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    m, k = weight.shape
    nb, kb, mb = -(-batch // b), -(-k // bi), -(-m // bo)
    data = te.placeholder((nb, kb, b, bi), "int8", name="data")
    wt = te.placeholder((mb, kb, bo, bi), "int8", name="weight")
    tiles, values = epilogue_tensors(ep, mb, b, bo, name)
    res = te.placeholder((nb, mb, b, bo), "int8", name="residual") if residual else None
    out = qdense_packed(data, wt, ep, tiles, residual=res, name=name)
    steps = ep.steps()
    if knobs is None:
        knobs = quantized_dense_knobs(cfg, nb=nb, mb=mb, kb=kb, steps=steps, residual=residual,
                                      nthreads=nthreads)  # fmt: skip
    else:
        acc = 1 + epilogue_channel_tiles(steps) + int(second_tile(steps))
        misfit = dense_misfit(cfg, knobs, nb=nb, mb=mb, kb=kb, acc_buffers=acc)
        if misfit is not None:
            raise ScheduleError(f"dense group {name}: {misfit} on {cfg.name}")
    tuned = knobs

    def build() -> Program:
        s = schedule_dense_packed(out, tuned, cfg)
        args = [data, wt, *tiles.values(), *([res] if res is not None else []), out]
        return tgt.codegen(
            lower(s, args, target=tgt),
            roles={"weight": "param", **{t.name: "param" for t in tiles.values()}},
        )

    key = ("dense", cfg, batch, weight.shape, residual, knobs, tuple(steps), tuple(tiles))
    prog = reused_program(key, [t.name for t in tiles.values()], build)
    values["weight"] = pack_weight(weight, cfg)
    macs = batch * m * k
    return QLayer(name, prog, values, knobs, macs, residual, *alu_uops(steps))


def _tuned(kind: str, name: str, check: Callable[[], object]) -> None:
    """Run ``check`` of given knobs; its ScheduleError names the group (the template's own
    message names the knob and the axis)."""
    try:
        check()
    except ScheduleError as e:
        text, own = str(e), f"{kind} {name}: "
        raise ScheduleError(f"{kind} group {name}: {text.removeprefix(own)}") from None


def pool2d_packed(
    data: Tensor,
    kind: str,
    pool: tuple[int, int],
    stride: tuple[int, int],
    *,
    zero_padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    name: str = "pool",
) -> Tensor:
    """Window max or sum of packed int8 ``data (N/b, C/bo, H, W, b, bo)`` on the ALU: ``data``
    is loaded into the accumulator (ACC8; ``zero_padding`` (top, left, bottom, right) rows and
    columns of zeros added by the LOAD). A max: the first tap copied, every other tap combined
    by MAX tensor-tensor, one stage per tap. A sum: one reduction stage over the window, which
    the ALU runs as ADD instructions looping over the window (its size does not grow the
    program: global pools of any size). Zero padding gives the max pool of a padded window only
    when the data is non-negative (the caller's to know).

    Example:
        >>> x = te.placeholder((1, 2, 4, 4, 1, 4), "int8", name="x")
        >>> pool2d_packed(x, "max", (2, 2), (2, 2)).shape
        (1, 2, 2, 2, 1, 4)
    """
    if data.dtype.name != "int8" or data.ndim != 6:
        raise ShapeError(f"{name}: pools packed int8 data, got {data.name}: {data.dtype}")
    if kind not in ("max", "sum"):
        raise ShapeError(f"{name}: the ALU pools by max or sum, not {kind!r}")
    pt, pl, pb, pr = zero_padding
    nb, cb, h, w, b, bo = data.shape
    h, w = h + pt + pb, w + pl + pr
    (kh, kw), (sh, sw) = pool, stride
    oshape = (nb, cb, (h - kh) // sh + 1, (w - kw) // sw + 1, b, bo)
    if any(zero_padding):
        # an int8 pad stage in the accumulator: an ACC8 LOAD with its zero padding
        src = topi.pad(data, (0, 0, pt, pl, 0, 0), (0, 0, pb, pr, 0, 0), name=f"{name}_in")
    else:
        src = te.compute(
            data.shape, lambda *i: data(*i).astype("int32"), name=f"{name}_in", tag="elemwise"
        )
    if kind == "sum":
        # one reduction over the window: one ALU instruction whose loops walk the window
        # (see inject_alu), so the program does not grow with the window
        ry = te.reduce_axis(kh, name=f"{name}_ry")
        rx = te.reduce_axis(kw, name=f"{name}_rx")
        return te.compute(
            oshape,
            lambda n, c, y, x, i, j: te.sum(
                src[n, c, y * sh + ry, x * sw + rx, i, j].astype("int32"), axis=[ry, rx]
            ),
            name=f"{name}_sum",
            tag="elemwise",
        )
    fn = op.maximum
    cur: Tensor | None = None
    for k in range(kh * kw):
        ky, kx = divmod(k, kw)
        tap = _tap(src, ky, kx, sh, sw)
        if cur is None:
            cur = te.compute(oshape, tap, name=f"{name}_t0", tag="elemwise")
        else:
            cur = te.compute(
                oshape,
                lambda *i, c=cur, t=tap: fn(c(*i), t(*i)),
                name=f"{name}_t{k}",
                tag="elemwise",
            )
    assert cur is not None
    return cur


def _tap(src: Tensor, ky: int, kx: int, sh: int, sw: int) -> Callable[..., Expr]:
    def tap(n: Expr, c: Expr, y: Expr, x: Expr, i: Expr, j: Expr) -> Expr:
        return src[n, c, y * sh + ky, x * sw + kx, i, j].astype("int32")

    return tap


def accumulator_stages(out: Tensor) -> tuple[list[Tensor], list[Tensor]]:
    """The stages between ``out`` and its inputs: ALU stages (``ewise``) and operands computed
    from inputs only, which are DMA'd into the accumulator (``loads``)."""
    ewise: list[Tensor] = []
    loads: list[Tensor] = []
    stack = list(out.op.input_tensors())
    while stack:
        t = stack.pop()
        if not isinstance(t.op, ComputeOp) or t in ewise or t in loads:
            continue
        inputs = t.op.input_tensors()
        if inputs and all(isinstance(i.op, PlaceholderOp) for i in inputs):
            loads.append(t)
            continue
        ewise.append(t)
        stack.extend(inputs)
    return ewise, loads


def place_in_accumulator(
    s: Schedule, ewise: list[Tensor], loads: list[Tensor], acc_scope: Scope
) -> None:
    """Put the ALU stages and the DMA'd operands in the accumulator, the ALU stages marked
    with the ``alu`` pragma."""
    from compiler.ir.pragma import ALU

    for t in loads:
        s[t].set_scope(acc_scope)
    for t in ewise:
        s[t].set_scope(acc_scope)
        s[t].pragma(s[t].leaf_iter_vars[0], ALU)


def attach_tile(
    s: Schedule,
    out: Tensor,
    at: IterVar,
    ewise: list[Tensor],
    loads: list[Tensor],
    *,
    store_at: IterVar,
) -> None:
    """Compute the ALU stages and DMA the operands at ``out``'s tile loop ``at``; the tile is
    stored from ``store_at``, the first loop inside it."""
    from compiler.ir.pragma import DMA_COPY

    for t in ewise:
        s[t].compute_at(s[out], at)
    for t in sorted(loads, key=lambda t: t.name):
        s[t].compute_at(s[out], at)
        s[t].pragma(s[t].leaf_iter_vars[0], DMA_COPY)
    s[out].pragma(store_at, DMA_COPY)


def schedule_pool_packed(out: Tensor, cfg: HwConfig, tile_h: int) -> Schedule:
    """Rows of ``tile_h`` output rows per channel block; every accumulator stage at the row
    tile, the input window DMA'd there, the output stored from it."""
    from compiler.schedule import create_schedule
    from compiler.targets.vta.intrin import make_scopes

    scopes = make_scopes(cfg)
    ewise, loads = accumulator_stages(out)
    oh = out.shape[2]
    if tile_h < 1 or oh % tile_h:
        raise ShapeError(f"pool {out.name}: tile_h={tile_h} must divide the {oh} output rows")
    s = create_schedule(out)
    place_in_accumulator(s, ewise, loads, scopes.acc)
    n, c, h, w, i, j = s[out].leaf_iter_vars
    h0, h1 = s[out].split(h, factor=tile_h)
    s[out].reorder(n, c, h0, h1, w, i, j)
    attach_tile(s, out, h0, ewise, loads, store_at=h1)
    return s


def pool_tile_h(cfg: HwConfig, in_w: int, out_h: int, out_w: int, k: int, stride: int,
                buffers: int) -> int:  # fmt: skip
    """The most output rows per tile whose input window and ``buffers`` result tiles fit the
    accumulator buffer (entries of one channel block)."""
    for t in range(out_h, 0, -1):
        if out_h % t:
            continue
        rows = (t - 1) * stride + k
        if rows * in_w + buffers * t * out_w <= cfg.acc_depth:
            return t
    raise ShapeError(
        f"pool: one output row of a {k}x{k} window over {in_w} columns does not fit the "
        f"accumulator buffer ({cfg.acc_depth} entries)"
    )


def compile_qpool(
    name: str,
    cfg: HwConfig,
    kind: str,
    *,
    in_shape: tuple[int, int, int, int],
    pool: tuple[int, int],
    stride: tuple[int, int],
    ep: QEpilogue | None = None,
    zero_padding: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> QLayer:
    """Compile a max pool (``kind="max"``) or a window sum followed by the requantization
    ``ep`` (``kind="sum"``) of int8 NCHW ``in_shape`` (already padded) for ``cfg``.

    Example:
        >>> import isa
        >>> layer = compile_qpool("p", isa.load_config("default"), "max", in_shape=(1, 8, 4, 4),
        ...                       pool=(2, 2), stride=(2, 2))
        >>> layer.out_shape
        (1, 2, 2, 2, 1, 4)
    """
    from compiler.build import lower
    from compiler.targets.vta import get_vta_target

    tgt = get_vta_target(cfg)
    b, bo = cfg.batch, cfg.block_out
    n, c, h, w = in_shape
    nb, cb = -(-n // b), -(-c // bo)
    data = te.placeholder((nb, cb, h, w, b, bo), "int8", name="data")
    acc = pool2d_packed(data, kind, pool, stride, zero_padding=zero_padding, name=name)
    tiles: dict[str, Tensor] = {}
    values: dict[str, np.ndarray] = {}
    if ep is not None:
        tiles, values = epilogue_tensors(ep, cb, b, bo, name)
        out = apply_epilogue(acc, ep, tiles, lambda i: (i[1], i[4], i[5]))
        steps, imm = len(ep.steps()), imm_steps(ep.steps())
    else:
        out = topi.cast(acc, "int8", name="out")
        steps = imm = 0
    oh, ow = acc.shape[2], acc.shape[3]
    in_w = w + zero_padding[1] + zero_padding[3]
    tile_h = pool_tile_h(cfg, in_w, oh, ow, pool[0], stride[0], 2 + len(tiles))
    s = schedule_pool_packed(out, cfg, tile_h)
    args = [data, *tiles.values(), out]
    prog = tgt.codegen(
        lower(s, args, target=tgt),
        layouts={"data": f"NCHW{b}n{bo}c", "out": f"NCHW{b}n{bo}c"},
        roles={t.name: "param" for t in tiles.values()},
    )
    taps = pool[0] * pool[1]
    # the taps combine acc tiles (tensor operands); only the epilogue has immediates
    return QLayer(name, prog, values, None, 0, False, taps + steps, imm)


def space_to_depth_factor(cfg: HwConfig, in_c: int, k: int, stride: int) -> int:
    """The factor by which a strided convolution with few input channels is rewritten as a
    stride-1 convolution over ``in_c * s * s`` channels (``s`` = the stride), or 0 when the
    rewrite does not apply: it needs ``in_c * s * s <= block_in`` (the channels still fit one
    block, which the padded first layer wastes otherwise) and ``k >= s``.

    Example:
        >>> import isa
        >>> cfg = isa.load_config("vta-1x16x16")
        >>> space_to_depth_factor(cfg, 3, 7, 2), space_to_depth_factor(cfg, 64, 3, 2)
        (2, 0)
    """
    if stride > 1 and k >= stride and in_c * stride * stride <= cfg.block_in:
        return stride
    return 0


def space_to_depth_weight(w: np.ndarray, s: int) -> np.ndarray:
    """OIHW weights of the equivalent stride-1 convolution: the kernel padded to a multiple of
    ``s`` with zeros, input channel ``c * s * s + dy * s + dx`` holding tap ``(ky * s + dy,
    kx * s + dx)`` at ``(ky, kx)``.

    Example:
        >>> space_to_depth_weight(np.ones((8, 3, 7, 7), np.int8), 2).shape
        (8, 12, 4, 4)
    """
    o, c, kh, kw = w.shape
    kq = -(-max(kh, kw) // s)
    wp = np.zeros((o, c, kq * s, kq * s), w.dtype)
    wp[:, :, :kh, :kw] = w
    wp = wp.reshape(o, c, kq, s, kq, s).transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(wp.reshape(o, c * s * s, kq, kq))


def _find_tag(out: Tensor, tag: str) -> Tensor:
    stack = [out]
    while stack:
        t = stack.pop()
        if getattr(t.op, "tag", None) == tag:
            return t
        stack.extend(t.op.input_tensors())
    raise ShapeError(f"{out.name} is not computed from a {tag} stage")


__all__ = [
    "QAdd",
    "QLayer",
    "compile_qconv2d",
    "compile_qdense",
    "compile_qpool",
    "depthwise_kernel",
    "pool2d_packed",
    "space_to_depth_factor",
    "space_to_depth_weight",
    "schedule_pool_packed",
    "QEpilogue",
    "apply_epilogue",
    "epilogue_tensors",
    "pack_channel_vector",
    "qconv2d_packed",
    "qdense_packed",
]
