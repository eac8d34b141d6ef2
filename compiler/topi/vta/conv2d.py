"""int8 conv2d on the accelerator: packed layout, requantize epilogue, schedule template.

The layer is a chain of tensor expressions (VTA's ``conv2d_packed`` plus its epilogue):

* ``conv``: packed convolution, data ``(N/b, C/bi, H, W, b, bi)`` int8 with kernel
  ``(O/bo, C/bi, KH, KW, bo, bi)`` int8 into int32 (any stride, padding, kernel size);
* ``shr``: ``conv >> shift``; optionally ``add``: plus a residual int8 tensor of the output's
  layout, loaded into the accumulator (``res_acc``, an ACC8 load);
* ``clip``: to ``[0, 127]`` with relu, ``[-128, 127]`` without; ``out``: cast to int8.

:func:`schedule_conv2d_packed` is VTA's conv2d schedule with knobs (:class:`Conv2dKnobs`):
output tiles of ``tile_b`` batch blocks x ``tile_co`` channel blocks x ``tile_h`` rows x
``tile_w`` columns, each accumulated over steps of ``tile_ci`` input-channel blocks whose input
window and weights are DMA'd per step; virtual threads split the tile loops over output
channels (``oc_nthread``) and/or rows (``h_nthread``); ``loop_order`` puts the row tiles
(``"h_co"``, VTA's template) or the channel tiles (``"co_h"``, the conv2d tutorial's) outside;
``weights_resident`` loads each thread's channel tile's weights for the whole reduction once,
at the channel-tile loop, instead of per reduction step of every output tile. Per-channel
epilogue operands (a quantized group's bias, multiplier and shift tiles) load with each output
tile, or once per thread when each thread has one output-channel tile.
Inside a step the GEMM loops run (co, h, ci, ky, kx, w) with ``gemm_fold="co_h"``: co and h
fold into the instruction, the rest are the micro-ops; the other choices fold another pair of
the loops co, h, w and ci into the instruction and unroll the rest (:class:`GemmFold`).
``kernel_step="row"`` makes each kernel row a reduction step of its own (the row loop ky leaves
the GEMM): a step loads one kernel row's input rows and weights.

Example:
    >>> import isa
    >>> from compiler import te
    >>> cfg = isa.load_config("default")
    >>> x = te.placeholder((1, 4, 8, 8, 1, 4), "int8", name="x")
    >>> w = te.placeholder((4, 4, 3, 3, 4, 4), "int8", name="w")
    >>> out = conv2d_packed(x, w, stride=1, padding=1, shift=8, relu=True)
    >>> out.shape, out.dtype
    ((1, 4, 8, 8, 1, 4), DType('int8'))
    >>> s = schedule_conv2d_packed(out, Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=2, tile_co=2,
    ...                                             oc_nthread=2), cfg)
    >>> 's["out"].bind("i1.outer.inner", "cthread")' in s.trace_text()
    True
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum

from compiler import topi
from compiler.errors import ScheduleError, ShapeError
from compiler.ir.pragma import ALU, DMA_COPY
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import ComputeOp, PlaceholderOp, Tensor
from compiler.topi.utils import pair
from isa import HwConfig

from .epilogue import find_epilogue, requantize_epilogue

CONV_TAG = "conv2d_packed"
#: The tag of an input stage that keeps only the pixels a strided 1x1 conv reads
#: (``conv2d_strided``); the schedule places it in the inp buffer like a padding stage.
SUBSAMPLE_TAG = "subsample"


class LoopOrder(StrEnum):
    """Which tile loop is outer: rows then output channels (``h_co``) or the reverse. A knob
    given as a name is converted once (``Conv2dKnobs``); the template compares members.

    Example:
        >>> LoopOrder("co_h") is LoopOrder.CO_H, f"{LoopOrder.H_CO}"
        (True, 'h_co')
    """

    H_CO = "h_co"
    CO_H = "co_h"

    def __repr__(self) -> str:
        # knobs print (and replay) as they are written: loop_order='h_co'
        return repr(self.value)


LOOP_ORDERS = tuple(LoopOrder)


class GemmFold(StrEnum):
    """Which two loops of a reduction step's GEMM the instruction folds into its
    ``iter_out``/``iter_in`` loops: two output-tile axes, or one and the step's input-channel
    blocks ``ci`` (whose micro-ops accumulate into the same entries). The other loops are
    unrolled into the micro-op kernel. The GEMM loops of a step run, outer first:

    =========  ============================  ==================================
    choice     loops                         micro-ops per kernel
    =========  ============================  ==================================
    ``co_h``   (co, h, ci, ky, kx, w)        ``tile_ci * kh * kw * tile_w``
    ``co_w``   (co, w, ci, ky, kx, h)        ``tile_ci * kh * kw * tile_h``
    ``h_w``    (h, w, ci, ky, kx, co)        ``tile_ci * kh * kw * tile_co``
    ``co_ci``  (co, ci, h, ky, kx, w)        ``tile_h * kh * kw * tile_w``
    ``h_ci``   (h, ci, co, ky, kx, w)        ``tile_co * kh * kw * tile_w``
    ``w_ci``   (w, ci, co, ky, kx, h)        ``tile_co * kh * kw * tile_h``
    =========  ============================  ==================================

    ``co_h`` is VTA's template. The instruction folds the first two loops of extent > 1
    (``compiler.targets.vta.passes.fold_uop``), so with a one-block/one-pixel axis it folds
    the next loop instead (:func:`gemm_loops` gives the loops as they fold).

    Example:
        >>> GemmFold("h_ci").order(), f"{GemmFold.CO_H}"
        (('b', 'h', 'ci', 'co', 'ky', 'kx', 'w'), 'co_h')
    """

    CO_H = "co_h"
    CO_W = "co_w"
    H_W = "h_w"
    CO_CI = "co_ci"
    H_CI = "h_ci"
    W_CI = "w_ci"

    def __repr__(self) -> str:
        return repr(self.value)

    @property
    def folded(self) -> tuple[str, str]:
        """The two loops the instruction folds, outer first."""
        a, b = self.value.split("_")
        return a, b

    def order(self) -> tuple[str, ...]:
        """The step's GEMM loops, outer first (batch outermost)."""
        rest = [a for a in ("co", "h", "ci", "w") if a not in self.folded]
        # the kernel window's taps stay just outside the last output axis left (VTA's order)
        last_out = [a for a in rest if a != "ci"][-1]
        inner = [a for a in rest if a != last_out]
        return ("b", *self.folded, *inner, "ky", "kx", last_out)


GEMM_FOLDS = tuple(GemmFold)

#: The kernel rows one reduction step covers (``Conv2dKnobs.kernel_step``): the whole window
#: (VTA's template) or one row.
KERNEL_STEPS = ("window", "row")


def gemm_loops(fold: GemmFold | str, extents: dict[str, int]) -> tuple[str, ...]:
    """The loops of a step's GEMM that remain once the loops of extent 1 are gone, outer
    first: the instruction folds the first two (a merge of adjacent loops aside) and unrolls
    the rest into micro-ops.

    Example:
        >>> ext = dict(b=1, co=1, h=7, w=7, ci=2, ky=3, kx=3)
        >>> gemm_loops("co_h", ext), gemm_loops("co_w", ext)
        (('h', 'ci', 'ky', 'kx', 'w'), ('w', 'ci', 'ky', 'kx', 'h'))
    """
    return tuple(a for a in GemmFold(fold).order() if extents[a] > 1)


def conv2d_packed(
    data: Tensor,
    kernel: Tensor,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, ...] = 0,
    *,
    shift: int = 0,
    relu: bool = False,
    residual: Tensor | None = None,
    name: str = "conv",
) -> Tensor:
    """The int8 layer ``clip((conv(data, kernel) >> shift) [+ residual])`` as int8."""
    if data.dtype.name != "int8" or kernel.dtype.name != "int8":
        raise ShapeError(
            f"{name}: the accelerator convolves int8 data and weights, got {data.name} "
            f"{data.dtype} and {kernel.name} {kernel.dtype}"
        )
    conv = topi.conv2d_nchwc(data, kernel, stride, padding, out_dtype="int32", name=name)
    return requantize_epilogue(conv, shift=shift, relu=relu, residual=residual)


@dataclass(frozen=True)
class Conv2dKnobs:
    """Schedule knobs of :func:`schedule_conv2d_packed` (tile sizes in blocks / pixels).

    Example:
        >>> Conv2dKnobs(tile_h=7, tile_w=14, tile_ci=1, tile_co=8, oc_nthread=2).nthreads
        2
    """

    tile_h: int
    tile_w: int
    tile_ci: int
    tile_co: int
    tile_b: int = 1
    oc_nthread: int = 1
    h_nthread: int = 1
    loop_order: LoopOrder = LoopOrder.H_CO
    #: load each thread's output-channel tile's weights for the whole reduction once, outside
    #: the row and column tile loops (needs ``loop_order="co_h"``, one channel tile and one
    #: batch tile per thread, and the weights to fit a thread's share of the wgt buffer;
    #: :func:`check_knobs`)
    weights_resident: bool = False
    #: the two output-tile axes each step's GEMM instruction folds (:class:`GemmFold`)
    gemm_fold: GemmFold = GemmFold.CO_H
    #: the kernel rows a reduction step covers: ``window`` (all ``kh``: the step loads the
    #: tile's whole input window) or ``row`` (one: ``kh`` steps per input-channel step, each
    #: loading the ``(tile_h - 1) * stride_h + 1`` input rows of one kernel row and its
    #: weights)
    kernel_step: str = "window"

    def __post_init__(self) -> None:
        if self.kernel_step not in KERNEL_STEPS:
            raise ScheduleError(
                f"kernel_step must be one of {list(KERNEL_STEPS)}, got {self.kernel_step!r}"
            )
        for name, kind in (("loop_order", LoopOrder), ("gemm_fold", GemmFold)):
            value = getattr(self, name)
            if not isinstance(value, kind):
                try:
                    object.__setattr__(self, name, kind(value))
                except ValueError:
                    raise ScheduleError(
                        f"{name} must be one of {[o.value for o in kind]}, got {value!r}"
                    ) from None

    def __repr__(self) -> str:
        # weights_resident and gemm_fold are printed only when not the template's default: the
        # knobs of its points print as they did before the knobs existed
        names = [f.name for f in fields(self)]
        if not self.weights_resident:
            names.remove("weights_resident")
        if self.gemm_fold is GemmFold.CO_H:
            names.remove("gemm_fold")
        if self.kernel_step == "window":
            names.remove("kernel_step")
        return f"Conv2dKnobs({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    @property
    def nthreads(self) -> int:
        return self.oc_nthread * self.h_nthread

    def single_thread(self) -> Conv2dKnobs:
        """The same tiles without virtual threads."""
        return replace(self, oc_nthread=1, h_nthread=1)

    def describe(self) -> str:
        text = (
            f"tile_b={self.tile_b} tile_co={self.tile_co} tile_h={self.tile_h} "
            f"tile_w={self.tile_w} tile_ci={self.tile_ci} oc_nthread={self.oc_nthread} "
            f"h_nthread={self.h_nthread} loop_order={self.loop_order}"
        )
        text += " weights_resident=True" if self.weights_resident else ""
        text += "" if self.gemm_fold is GemmFold.CO_H else f" gemm_fold={self.gemm_fold}"
        return text + ("" if self.kernel_step == "window" else f" kernel_step={self.kernel_step}")


@dataclass(frozen=True)
class ConvStages:
    """The stages of a conv2d layer, found from its output."""

    out: Tensor
    clip: Tensor
    conv: Tensor
    ewise: tuple[Tensor, ...]  # accumulator stages between conv and out (shr, add, clip)
    res_acc: Tensor | None
    data: Tensor  # the placeholder
    pad: Tensor | None
    kernel: Tensor
    # every operand loaded into the accumulator by a DMA (the residual, per-channel tiles)
    loads: tuple[Tensor, ...] = ()


def find_stages(out: Tensor) -> ConvStages:
    """Walk from the layer's output to its convolution (names what is missing).

    Stages between the convolution and the output are accumulator (ALU) stages, except those
    computed from input tensors only, which load an operand into the accumulator (a DMA).
    """
    conv, ewise, loads = find_epilogue(out, CONV_TAG, "conv2d")
    res_acc = next((t for t in loads if t.name == "res_acc"), loads[0] if loads else None)
    inputs = conv.op.input_tensors()
    src, kernel = inputs[0], inputs[1]
    pad = src if isinstance(src.op, ComputeOp) and src.op.tag in ("pad", SUBSAMPLE_TAG) else None
    data = pad.op.input_tensors()[0] if pad is not None else src
    if not isinstance(kernel.op, PlaceholderOp):
        raise ScheduleError(f"the kernel of {conv.name} must be an input tensor")
    if not ewise:
        raise ScheduleError(f"{out.name} needs at least one accumulator stage before the cast")
    order = {t: k for k, t in enumerate(_topo(out))}
    ewise.sort(key=lambda t: order[t])
    loads.sort(key=lambda t: t.name)
    return ConvStages(out, ewise[-1], conv, tuple(ewise), res_acc, data, pad, kernel, tuple(loads))


def _topo(out: Tensor) -> list[Tensor]:
    seen: list[Tensor] = []

    def visit(t: Tensor) -> None:
        if t in seen:
            return
        for i in t.op.input_tensors():
            visit(i)
        seen.append(t)

    visit(out)
    return seen


def _per_channel(t: Tensor, ob: int) -> bool:
    """Whether accumulator load ``t`` is a per-channel operand ``(C/bo, b, bo)`` (one entry
    per output-channel block), not a tile of the output's shape (a residual)."""
    return len(t.shape) == 3 and t.shape[0] == ob


def resident_weight_rows(tile_co: int, icb: int, k: int | tuple[int, int]) -> int:
    """The wgt buffer rows of one output-channel tile's weights for the whole reduction
    (``k``: the kernel's size, or its ``(rows, columns)``).

    Example:
        >>> resident_weight_rows(2, 1, 7)  # ResNet-18's C1 on vta-1x16x16, two channel blocks
        98
        >>> resident_weight_rows(2, 1, (1, 7))
        14
    """
    kh, kw = pair(k, "kernel size")
    return tile_co * icb * kh * kw


#: The thread counts each tile axis may be split into (``oc_nthread``, ``h_nthread``).
THREAD_SPLITS = (1, 2, 4)


def max_vthreads(cfg: HwConfig | None) -> int:
    """The most virtual threads a program can interleave: each thread keeps a token of its own
    in flight in a dependency queue besides the one the next block pops, so ``n`` threads need
    queues deeper than ``n`` (4 on every shipped preset, whose queues hold 8 tokens).

    Example:
        >>> import isa
        >>> max_vthreads(isa.load_config("vta-1x16x16"))
        4
    """
    depth = 8 if cfg is None else cfg.dep_queue_depth
    return depth // 2


def check_knobs(st: ConvStages, knobs: Conv2dKnobs, cfg: HwConfig | None = None) -> None:
    """Raise unless the tiles divide their axes, the thread split divides the tile loops and
    the dependency queues hold the threads' tokens (and, with ``weights_resident``, the loop
    order is ``co_h`` and a channel tile's weights fit a thread's share of ``cfg``'s wgt
    buffer)."""
    nb, ob, oh, ow, _, _ = st.conv.shape
    icb = st.kernel.shape[1]
    for name, tile, ext in (
        ("tile_b", knobs.tile_b, nb),
        ("tile_co", knobs.tile_co, ob),
        ("tile_h", knobs.tile_h, oh),
        ("tile_w", knobs.tile_w, ow),
        ("tile_ci", knobs.tile_ci, icb),
    ):
        if tile < 1 or ext % tile:
            raise ScheduleError(
                f"conv2d {st.conv.name}: {name}={tile} must divide the axis of extent {ext}"
            )
    for name, n, tiles in (
        ("oc_nthread", knobs.oc_nthread, ob // knobs.tile_co),
        ("h_nthread", knobs.h_nthread, oh // knobs.tile_h),
    ):
        if n not in THREAD_SPLITS:
            raise ScheduleError(
                f"conv2d {st.conv.name}: {name} must be one of {THREAD_SPLITS}, got {n}"
            )
        if tiles % n:
            raise ScheduleError(
                f"conv2d {st.conv.name}: {name}={n} needs a multiple of {n} tiles along its "
                f"axis, there are {tiles}"
            )
    max_threads = max_vthreads(cfg)
    if knobs.nthreads > max_threads:
        raise ScheduleError(
            f"conv2d {st.conv.name}: {knobs.nthreads} virtual threads (oc_nthread="
            f"{knobs.oc_nthread} x h_nthread={knobs.h_nthread}) need more tokens than the "
            f"dependency queues hold; at most {max_threads}"
        )
    if knobs.kernel_step == "row" and st.kernel.shape[2] == 1:
        raise ScheduleError(
            f"conv2d {st.conv.name}: kernel_step='row' needs a kernel of more than one row, "
            f"the kernel is {st.kernel.shape[2]}x{st.kernel.shape[3]}"
        )
    if knobs.weights_resident:
        if knobs.loop_order is not LoopOrder.CO_H:
            raise ScheduleError(
                f"conv2d {st.conv.name}: weights_resident needs loop_order='co_h' (the channel "
                f"tiles outside the row tiles), got {knobs.loop_order.value!r}"
            )
        per_thread = ob // (knobs.tile_co * knobs.oc_nthread)
        if per_thread != 1 or knobs.tile_b != nb:
            # a loop around the resident load would carry a store -> load token (the load of
            # the next tile's weights after the last store), which no dependency queue carries
            raise ScheduleError(
                f"conv2d {st.conv.name}: weights_resident needs one channel tile and one batch "
                f"tile per thread (tile_co x oc_nthread = {ob} blocks, tile_b = {nb}); there "
                f"are {per_thread} channel tiles and {nb // knobs.tile_b} batch tiles"
            )
        _, _, kh, kw, _, _ = st.kernel.shape
        rows = knobs.tile_co * icb * kh * kw
        if cfg is not None and rows > cfg.wgt_depth // knobs.nthreads:
            raise ScheduleError(
                f"conv2d {st.conv.name}: weights_resident needs a channel tile's weights "
                f"({knobs.tile_co} x {icb} x {kh} x {kw} = {rows} rows) to fit a thread's "
                f"{cfg.wgt_depth // knobs.nthreads} rows of the wgt buffer"
            )


def schedule_conv2d_packed(out: Tensor, knobs: Conv2dKnobs, cfg: HwConfig) -> Schedule:
    """VTA's conv2d schedule for the layer ending in ``out`` (see the module docstring)."""
    from compiler.targets.vta.intrin import gemm_intrinsic, make_scopes

    st = find_stages(out)
    check_knobs(st, knobs, cfg)
    scopes = make_scopes(cfg)
    s = create_schedule(out)
    conv = st.conv
    if st.pad is not None:
        s[st.pad].set_scope(scopes.inp)
        cdata = st.pad
    else:
        cdata = s.cache_read(st.data, scopes.inp, [conv])
    ckernel = s.cache_read(st.kernel, scopes.wgt, [conv])
    s[conv].set_scope(scopes.acc)
    for t in st.loads:
        s[t].set_scope(scopes.acc)
    for t in st.ewise:
        s[t].set_scope(scopes.acc)
        s[t].pragma(s[t].leaf_iter_vars[0], ALU)

    # output tiles
    ob = st.conv.shape[1]
    x_b, x_co, x_h, x_w, _, _ = s[out].leaf_iter_vars
    b0, b1 = s[out].split(x_b, factor=knobs.tile_b)
    co0, co1 = s[out].split(x_co, factor=knobs.tile_co)
    h0, h1 = s[out].split(x_h, factor=knobs.tile_h)
    w0, w1 = s[out].split(x_w, factor=knobs.tile_w)
    bi, ci = s[out].leaf_iter_vars[-2:]
    outer = [h0, co0] if knobs.loop_order is LoopOrder.H_CO else [co0, h0]
    s[out].reorder(b0, *outer, w0, b1, co1, h1, w1, bi, ci)
    for t in (conv, *st.ewise):
        s[t].compute_at(s[out], w0)
    for t in st.loads:
        s[t].compute_at(s[out], w0)
        s[t].pragma(s[t].leaf_iter_vars[0], DMA_COPY)

    # virtual threads: consecutive tiles of the split axis go to different threads, and the
    # thread loops enclose everything else (each thread is a whole program of its own)
    threads = []
    co_loop = co0  # the loop of one output-channel tile (of each thread)
    if knobs.oc_nthread > 1:
        co_loop, vt = s[out].split(co0, factor=knobs.oc_nthread)
        threads.append(vt)
    if knobs.h_nthread > 1:
        _, vt = s[out].split(h0, factor=knobs.h_nthread)
        threads.append(vt)
    if threads:
        rest = [iv for iv in s[out].leaf_iter_vars if all(iv is not t for t in threads)]
        s[out].reorder(*threads, *rest)
        for vt in threads:
            s[out].bind(vt, "cthread")
    if ob == knobs.tile_co * knobs.oc_nthread:
        # one channel tile per thread: a per-channel operand (bias, multiplier, shift) is the
        # same for every row, column and batch tile of the thread, so it is loaded once, at
        # the thread's outermost loop, instead of once per round of tiles, where its LOAD
        # waits for the memory port behind the next round's input loads
        outermost = next(iv for iv in s[out].leaf_iter_vars if iv not in threads)
        for t in st.loads:
            if _per_channel(t, ob):
                s[t].compute_at(s[out], outermost)

    # the convolution: reduction steps of tile_ci input blocks, then the GEMM loops
    n, obv, y, x, cbi, coi = s[conv].leaf_iter_vars[:6]
    rcb, ry, rx, rci = s[conv].leaf_iter_vars[6:]
    ko, ki = s[conv].split(rcb, factor=knobs.tile_ci)
    axis = {"b": n, "co": obv, "h": y, "w": x, "ci": ki, "ky": ry, "kx": rx}
    step = ko
    if knobs.kernel_step == "row":
        # one kernel row per step: the step's input is that row's window, (th - 1) * s + 1
        # rows instead of (th - 1) * s + k, and its weights one row of the kernel
        gemm = [axis[a] for a in knobs.gemm_fold.order() if a != "ky"]
        s[conv].reorder(ko, ry, *gemm, cbi, coi, rci)
        step = ry
    else:
        s[conv].reorder(ko, *(axis[a] for a in knobs.gemm_fold.order()), cbi, coi, rci)
    s[cdata].compute_at(s[conv], step)
    if knobs.weights_resident:
        # the channel tile's weights for every reduction step, loaded once per channel tile
        s[ckernel].compute_at(s[out], co_loop)
    else:
        s[ckernel].compute_at(s[conv], step)
    s[cdata].pragma(s[cdata].leaf_iter_vars[0], DMA_COPY)
    s[ckernel].pragma(s[ckernel].leaf_iter_vars[0], DMA_COPY)
    s[conv].tensorize(cbi, gemm_intrinsic(cfg))
    s[out].pragma(co1, DMA_COPY)
    return s


def conv2d_layouts(cfg: HwConfig) -> dict[str, str]:
    """The layouts a packed conv2d program declares for its tensors (the program file's
    symbols): data and residual/output ``NCHW{b}n{c}c``, the kernel ``OIHW{o}o{i}i``.

    Example:
        >>> import isa
        >>> conv2d_layouts(isa.load_config("default"))["kernel"]
        'OIHW4o4i'
    """
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    return {
        "data": f"NCHW{b}n{bi}c",
        "kernel": f"OIHW{bo}o{bi}i",
        "residual": f"NCHW{b}n{bo}c",
        "out": f"NCHW{b}n{bo}c",
    }


def conv2d_shapes(
    cfg: HwConfig, batch: int, in_c: int, out_c: int, h: int, w: int, k: int | tuple[int, int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Packed data and kernel shapes; channels and batch padded up to the block sizes (``k``:
    the kernel's size, or its ``(rows, columns)``).

    Example:
        >>> import isa
        >>> conv2d_shapes(isa.load_config("default"), 1, 3, 64, 224, 224, 7)
        ((1, 1, 224, 224, 1, 4), (16, 1, 7, 7, 4, 4))
        >>> conv2d_shapes(isa.load_config("default"), 1, 8, 8, 32, 32, (1, 3))[1]
        (2, 2, 1, 3, 4, 4)
    """
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    nb, cb, ob = -(-batch // b), -(-in_c // bi), -(-out_c // bo)
    kh, kw = pair(k, "kernel size")
    return (nb, cb, h, w, b, bi), (ob, cb, kh, kw, bo, bi)


def output_size(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


__all__ = [
    "Conv2dKnobs",
    "ConvStages",
    "GEMM_FOLDS",
    "GemmFold",
    "THREAD_SPLITS",
    "check_knobs",
    "conv2d_packed",
    "conv2d_shapes",
    "find_stages",
    "gemm_loops",
    "max_vthreads",
    "output_size",
    "resident_weight_rows",
    "schedule_conv2d_packed",
]
