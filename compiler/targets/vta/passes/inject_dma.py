"""DMA injection: copy nests under ``pragma dma_copy`` become 2-D DMA calls.

A copy nest is a perfect loop nest around one store (run after flattening, so indices are
affine in the loops):

* into an SRAM scope from main memory: a LOAD. ``inp``/``wgt`` copy int8 to int8; into the
  accumulator an int32 copy is an ACC load and an int8 copy (cast to int32 or not, as
  ``cache_read`` of an int8 tensor makes) an ACC8 load (the hardware sign-extends). A padding
  stage inlined into the copy, ``if_then_else(lo <= y + c and ..., X[...], 0)``, becomes the
  LOAD's zero padding.
* from the accumulator to main memory with a cast to int8 (or from an int8 stage kept in the
  accumulator, as ``cache_write`` makes): a STORE of the out buffer, the entries' low 8 bits.

The innermost loops must copy whole SRAM entries; loops that walk memory contiguously are
merged (the pattern analysis of VTA's ``_get_2d_pattern``). As the iterations of a copy are
independent, any remaining loop may play a DMA dimension: the row (``x``) is a loop contiguous
on both sides (none: rows of one entry), the rows (``y``) a loop along which the SRAM side
continues row after row, with any DRAM stride; innermost loops are preferred, and every other
loop stays a host loop that issues one DMA per iteration. Padding conditions on ``x``/``y``
become the four padding counts (computed on the host from the tile position); conditions on
host loops decide whether a whole transfer is zeros. Field limits (sizes, stride and padding
counts, from ``isa``'s format declarations) are honoured when the transfer is issued
(:mod:`compiler.targets.vta.dma`).

Before / after (a padded input tile)::

    pragma dma_copy = 1:                                 for i2 ...   (host loops, if any)
      for i2 in range(5):                                vta.load_inp(address_of(pad[0]),
        for i3 in range(8):                                address_of(X[...]), 5, 8, 6,
          for i5 in range(4):                              y_pad_0, y_pad_1, 1, 1)
            pad[i2*32 + i3*4 + i5] =
              if_then_else(y0 + i2 >= 1 and ..., X[...], int8(0))

Example:
    >>> import isa
    >>> make_inject_dma(isa.load_config("default")).__name__
    'inject_dma'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from compiler.arith.linear import detect_linear_equation
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir.buffer import GLOBAL, Buffer
from compiler.ir.expr import BufferLoad, Expr, IntImm, Var
from compiler.ir.functor import rewrite, substitute
from compiler.ir.node import Node
from compiler.ir.pragma import DMA_COPY
from compiler.ir.printer import to_text
from compiler.ir.stmt import BufferStore, For, Pragma, PrimFunc, Stmt
from isa import HwConfig, MemType

from ..calls import dma_load, dma_store
from ..errors import VTATargetError
from ..intrin import make_scopes
from .nest import analyze, merge_contiguous, perfect_nest, split_entry


@dataclass(frozen=True)
class _Atom:
    """``coeff * var + rest >= 0`` (``var`` None: a condition on host loops only)."""

    var: Var | None
    coeff: int
    rest: Expr


def _atoms(cond: Expr, loop_vars: list[Var], what: str) -> list[_Atom]:
    if isinstance(cond, E.And):
        return _atoms(cond.a, loop_vars, what) + _atoms(cond.b, loop_vars, what)
    if isinstance(cond, E.GE):
        diff = cond.a - cond.b
    elif isinstance(cond, E.GT):
        diff = cond.a - cond.b - 1
    elif isinstance(cond, E.LE):
        diff = cond.b - cond.a
    elif isinstance(cond, E.LT):
        diff = cond.b - cond.a - 1
    else:
        raise VTATargetError(
            f"{what}: the padding condition {to_text(cond)} is not a conjunction of bounds"
        )
    coeffs = detect_linear_equation(diff, loop_vars)
    if coeffs is None:
        raise VTATargetError(f"{what}: the padding bound {to_text(cond)} is not affine")
    *cs, base = coeffs
    used = [(v, int(c)) for v, c in zip(loop_vars, cs, strict=True) if c != 0]  # type: ignore[arg-type]
    if len(used) > 1:
        raise VTATargetError(
            f"{what}: the padding bound {to_text(cond)} mixes the loops "
            f"{[v.name for v, _ in used]}; padding must be per dimension"
        )
    rest = base if isinstance(base, Expr) else IntImm(int(base))
    if not used:
        return [_Atom(None, 0, rest)]
    return [_Atom(used[0][0], used[0][1], rest)]


def _pads(atoms: list[_Atom], extent: int) -> tuple[Expr, Expr]:
    """(leading, trailing) counts of iterations that fail the bounds, clamped to the extent."""
    before: Expr = IntImm(0)
    after: Expr = IntImm(0)
    for a in atoms:
        c = a.coeff
        if c > 0:  # valid iff var >= ceil(-rest / c)
            first = op.floordiv(c - 1 - a.rest, c)
            before = op.maximum(before, op.minimum(op.maximum(first, 0), extent))
        else:  # valid iff var <= floor(rest / -c)
            last = op.floordiv(a.rest, -c)
            after = op.maximum(after, op.minimum(op.maximum(extent - 1 - last, 0), extent))
    return before, after


class _CopyLowering:
    def __init__(self, cfg: HwConfig, body: Stmt, stage: str = "") -> None:
        self.cfg = cfg
        self.sram = make_scopes(cfg)
        self.body = body
        self.loops, leaf = perfect_nest(body, "dma_copy")
        if not isinstance(leaf, BufferStore):
            raise VTATargetError(
                "dma_copy: the copy must be a perfect loop nest around one store; found "
                f"{type(leaf).__name__}:\n{to_text(leaf)}"
            )
        self.store = leaf
        self.what = f"dma_copy of stage {stage or leaf.buffer.name}"

    def fail(self, why: str) -> VTATargetError:
        return VTATargetError(f"{self.what}: {why}")

    # ---- what is copied -----------------------------------------------------------------------
    def classify(self) -> tuple[MemType, Buffer, BufferLoad, Expr | None]:
        """(memory type, the buffer written, the load read, the padding condition)."""
        dst, value = self.store.buffer, self.store.value
        sram = self.sram
        if sram.owns(dst.scope):
            cond = None
            cast = None
            if isinstance(value, E.Cast):
                cast, value = value.dtype, value.value
            if isinstance(value, E.IfThenElse):
                zero = value.else_value
                if not (isinstance(zero, E.IntImm) and zero.value == 0):
                    raise self.fail(f"padding must be zeros, the else-branch is {to_text(zero)}")
                cond, value = value.cond, value.then_value
            if isinstance(value, E.Cast) and cast is None:
                cast, value = value.dtype, value.value
            if not isinstance(value, BufferLoad) or value.buffer.scope is not GLOBAL:
                raise self.fail(
                    f"a DMA load copies from main memory; the value is {to_text(self.store.value)}"
                )
            src = value
            if dst.scope is sram.acc:
                # int8 values, cast to int32 or kept as int8 (cache_read of an int8 tensor),
                # are sign-extended into accumulator entries: an ACC8 load.
                src_dt, dst_dt = src.buffer.dtype.name, dst.dtype.name
                if src_dt == "int8" and (dst_dt == "int32") == (cast is not None):
                    return MemType.ACC8, dst, src, cond
                if src_dt == "int32" and dst_dt == "int32" and cast is None:
                    return MemType.ACC, dst, src, cond
                raise self.fail(
                    f"the accumulator loads int32 values or int8 values (cast to int32 or not), "
                    f"not {src_dt} into {dst_dt} ({to_text(self.store.value)})"
                )
            if dst.dtype.name != "int8" or src.buffer.dtype.name != "int8" or cast is not None:
                raise self.fail(
                    f"{dst.scope.name} holds int8 values; {src.buffer.name} is "
                    f"{src.buffer.dtype} and {dst.name} is {dst.dtype}"
                )
            mem = MemType.INP if dst.scope is sram.inp else MemType.WGT
            return mem, dst, src, cond
        if dst.scope is not GLOBAL:
            raise self.fail(f"cannot copy into scope {dst.scope.name}")
        if (
            isinstance(value, E.Cast)
            and value.dtype.name == "int8"
            and isinstance(value.value, BufferLoad)
            and value.value.buffer.scope is sram.acc
            and dst.dtype.name == "int8"
        ):
            return MemType.OUT, dst, value.value, None
        if (
            isinstance(value, BufferLoad)
            and value.buffer.scope is sram.acc
            and value.buffer.dtype.name == "int8"
            and dst.dtype.name == "int8"
        ):
            # an int8 stage kept in the accumulator (cache_write): its entries' low 8 bits
            return MemType.OUT, dst, value, None
        raise self.fail(
            "a DMA store copies the low 8 bits of accumulators (int8(acc[...])) to main memory; "
            f"the value is {to_text(value)}"
        )

    def lanes(self, mem: MemType) -> int:
        cfg = self.cfg
        if mem == MemType.INP:
            return cfg.batch * cfg.block_in
        if mem == MemType.WGT:
            return cfg.block_out * cfg.block_in
        return cfg.batch * cfg.block_out

    # ---- the transfer -------------------------------------------------------------------------
    def run(self) -> Stmt:
        mem, dst, src, cond = self.classify()
        is_load = mem != MemType.OUT
        # accesses: 0 = SRAM side, 1 = DRAM side
        sram_idx = self.store.indices[0] if is_load else src.indices[0]
        dram_idx = src.indices[0] if is_load else self.store.indices[0]
        sram_buf = dst if is_load else src.buffer
        dram_buf = src.buffer if is_load else dst
        vars_ = [lp.var for lp in self.loops]
        exts = [lp.extent.value for lp in self.loops]  # type: ignore[attr-defined]
        groups = analyze(vars_, exts, [sram_idx, dram_idx], self.what)
        atoms = [] if cond is None else _atoms(cond, vars_, self.what)
        host_pred = [a for a in atoms if a.var is None]
        for g in groups:
            g.conds = [a for a in atoms if a.var == g.var]
        lanes = self.lanes(mem)
        outer, elem = split_entry(groups, lanes, self.what)
        outer = merge_contiguous(outer)
        # The iterations of a copy are independent, so any loop may play a DMA dimension:
        # x is a run of entries contiguous on both sides (else rows are one entry wide); y is a
        # loop along which the SRAM side continues row after row (a LOAD fills SRAM
        # contiguously and a STORE reads it so), whatever its DRAM stride: e.g. the weight
        # blocks of one reduction step, n entries apart in DRAM, are one LOAD of m rows of one
        # entry, and a transposing store is one STORE of strided rows. Innermost loops are
        # preferred; the others stay host loops, one transfer per iteration.
        x = next((g for g in reversed(outer) if g.coeffs == (1, 1)), None)
        x_run = x.extent if x is not None else 1
        rows = [g for g in outer if g is not x and g.coeffs[0] == x_run and g.coeffs[1] >= 0]
        y = rows[-1] if rows else None
        moved = set(elem)
        for dim in (x, y):
            if dim is not None:
                moved.update(dim.vars)
        for g in outer:
            if g is not x and g is not y:
                # a host loop: its bounds select whole transfers
                host_pred += g.conds
        zero = dict.fromkeys(moved, IntImm(0))
        sram_base = substitute(sram_idx, zero)
        dram_base = substitute(dram_idx, zero)
        x_ext = x.extent if x else 1
        y_ext = y.extent if y else 1
        x_stride = y.coeffs[1] if y else x_ext
        if not is_load:
            if atoms:
                raise self.fail("a store cannot be padded")
            call = dma_store(
                BufferLoad(sram_buf, (sram_base,)),
                BufferLoad(dram_buf, (dram_base,)),
                y_ext,
                x_ext,
                x_stride,
            )
            return self._host_loops(moved, call)
        y0, y1 = _pads(y.conds, y_ext) if y else (IntImm(0), IntImm(0))
        x0, x1 = _pads(x.conds, x_ext) if x else (IntImm(0), IntImm(0))
        if host_pred:
            ok = op.all_of(*(a.rest >= 0 if a.var is None else _holds(a) for a in host_pred))
            y0 = op.if_then_else(ok, y0, IntImm(y_ext))
            y1 = op.if_then_else(ok, y1, IntImm(0))
        shift: Expr = IntImm(0)
        if y is not None:
            shift = shift + y0 * (y.coeffs[1] * lanes)
        if x is not None:
            shift = shift + x0 * lanes
        call = dma_load(
            mem,
            BufferLoad(sram_buf, (sram_base,)),
            BufferLoad(dram_buf, (dram_base + shift,)),
            y_ext,
            x_ext,
            x_stride,
            (y0, y1, x0, x1),
        )
        return self._host_loops(moved, call)

    def _host_loops(self, moved: set[Var], call: Stmt) -> Stmt:
        body = call
        for lp in reversed(self.loops):
            if lp.var not in moved and lp.extent.value != 1:  # type: ignore[attr-defined]
                body = For(lp.var, lp.min, lp.extent, lp.kind, body, lp.thread, lp.annotations)
        for lp in self.loops:
            if lp.extent.value == 1 and lp.var not in moved:  # type: ignore[attr-defined]
                body = substitute(body, {lp.var: IntImm(0)})
        return body


def _holds(a: _Atom) -> Expr:
    assert a.var is not None
    return a.var * a.coeff + a.rest >= 0


def lower_copy(cfg: HwConfig, body: Stmt, stage: str = "") -> Stmt:
    """The DMA call(s) of one ``dma_copy`` nest of ``stage`` (see the module docstring)."""
    return _CopyLowering(cfg, body, stage).run()


def make_inject_dma(cfg: HwConfig) -> Callable[[PrimFunc], PrimFunc]:
    """The ``inject_dma`` pass for ``cfg``."""

    def inject_dma(func: PrimFunc) -> PrimFunc:
        def post(n: Node) -> Node | None:
            if isinstance(n, Pragma) and n.key is DMA_COPY:
                return lower_copy(cfg, n.body, n.stage)
            return None

        return func.with_body(rewrite(func.body, post))

    return inject_dma
