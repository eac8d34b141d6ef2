"""ALU injection: elementwise nests on the accumulator under ``pragma alu`` become ALU
micro-op nests.

The tensor ALU updates accumulator entries in place, lane by lane:
``acc[dst] = op(acc[dst], imm or acc[src])`` with op one of MIN, MAX, ADD, SHR (a negative
amount shifts left) and MUL. A stage's expression is decomposed into a chain of such steps
starting from one accumulator operand:

* ``min``/``max``/``+``/``*`` with an immediate or another accumulator tensor (either side);
* ``x >> k`` and ``x >> t`` (SHR by an immediate or per lane by a tensor); ``x << k`` is SHR by
  ``-k``; ``x - k`` is ADD of ``-k``;
* a plain copy: in place (the stage reads the element it writes) a SHR by 0, which refreshes
  the out buffer that stores read (accumulator loads do not write it); otherwise the
  destination is cleared (MUL by 0) and the source added.

A reduction stage (``te.sum`` over a window: the nest ``init; for r...: acc = acc + x``)
becomes two nests: the init (MUL by 0, then ADD of a non-zero identity) and the update with
the reduction loops outermost, so that they fold into the instruction's ``iter_out``/``iter_in``
with a destination stride of 0: the window is summed by one ALU instruction whatever its size
(reordering is exact: int32 ADD, MIN and MAX are associative and commutative).

What the ALU cannot do raises :class:`VTATargetError` naming the stage and the operation:
division or modulo, subtracting a tensor, shifting left by a tensor, immediates that do not fit
the imm field (its range from ``isa.limits``), operands outside the accumulator, values that are
not whole accumulator entries.

Before / after (in place, ``default`` core: an entry is 4 int32 lanes)::

    pragma alu = 1:                        for i in range(8):
      for i in range(8):                     vta.uop_alu_max_imm(address_of(acc[i*4]), -128)
        for l in range(4):                 for i in range(8):
          acc[i*4 + l] =                     vta.uop_alu_min_imm(address_of(acc[i*4]), 127)
            min(max(acc[i*4 + l], -128), 127)

Example:
    >>> import isa
    >>> make_inject_alu(isa.load_config("default")).__name__
    'inject_alu'
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.ir import expr as E
from compiler.ir.expr import BufferLoad, Expr, IntImm
from compiler.ir.functor import rewrite, substitute
from compiler.ir.node import Node
from compiler.ir.pragma import ALU
from compiler.ir.printer import to_text
from compiler.ir.stmt import BufferStore, For, Pragma, PrimFunc, SeqStmt, Stmt, seq
from isa import AluOp, HwConfig, limits

from ..calls import alu_uop
from ..errors import VTATargetError
from ..intrin import make_scopes
from .nest import analyze, perfect_nest, split_entry

_BINARY: dict[type[E.BinaryOp], AluOp] = {
    E.Add: AluOp.ADD,
    E.Mul: AluOp.MUL,
    E.Min: AluOp.MIN,
    E.Max: AluOp.MAX,
}

Step = tuple[AluOp, "IntImm | BufferLoad"]


class _NotChain(Exception):
    pass


class _AluLowering:
    def __init__(self, cfg: HwConfig, body: Stmt, stage: str = "") -> None:
        self.cfg = cfg
        self.acc = make_scopes(cfg).acc
        self.loops, leaf = perfect_nest(body, "alu")
        #: a reduction's init store and reduction loops (the update is ``self.store``; a
        #: window of one element has no loop left)
        self.init: BufferStore | None = None
        self.reduce_loops: list[For] = []
        if isinstance(leaf, SeqStmt) and len(leaf.stmts) == 2:
            init, rest = leaf.stmts
            rloops, update = perfect_nest(rest, "alu")
            if (
                isinstance(init, BufferStore)
                and isinstance(update, BufferStore)
                and update.buffer == init.buffer
                and update.indices == init.indices
            ):
                self.init, self.reduce_loops, leaf = init, rloops, update
        if not isinstance(leaf, BufferStore):
            raise VTATargetError(
                "alu: an ALU stage must be a perfect loop nest around one store; found "
                f"{type(leaf).__name__}:\n{to_text(leaf)}"
            )
        self.store = leaf
        # the stage the user scheduled (alu_in_place may have merged its buffer into another)
        self.what = f"alu stage {stage or leaf.buffer.name}"

    def fail(self, why: str) -> VTATargetError:
        return VTATargetError(f"{self.what}: {why}")

    # ---- the expression as a chain of in-place steps --------------------------------------------
    def leaf(self, e: Expr) -> IntImm | BufferLoad | None:
        if isinstance(e, IntImm):
            return e
        if isinstance(e, E.Cast) and e.dtype.name == "int32":
            e = e.value  # an int8 operand in the accumulator is already sign-extended
        if isinstance(e, BufferLoad):
            if e.buffer.scope is not self.acc:
                raise self.fail(
                    f"operand {e.buffer.name} is in scope {e.buffer.scope.name}; the ALU reads "
                    f"only the accumulator ({self.acc.name}); cache it there with a dma_copy"
                )
            return e
        return None

    def is_dst(self, e: Expr) -> bool:
        return (
            isinstance(e, BufferLoad)
            and e.buffer == self.store.buffer
            and (e.indices == self.store.indices)
        )

    def chain(self, e: Expr) -> tuple[BufferLoad, list[Step]]:
        base = self.leaf(e)
        if isinstance(base, BufferLoad):
            return base, []
        if isinstance(e, E.BinaryOp) and type(e) in _BINARY:
            alu = _BINARY[type(e)]
            options = []
            for a, b in ((e.a, e.b), (e.b, e.a)):
                operand = self.leaf(b)
                if operand is None:
                    continue
                try:
                    got_base, steps = self.chain(a)
                except _NotChain:
                    continue
                options.append((got_base, steps + [(alu, operand)]))
            if not options:
                raise _NotChain(to_text(e))
            # Prefer the order whose base is the destination itself (in place).
            options.sort(key=lambda o: not self.is_dst(o[0]))
            return options[0]
        if isinstance(e, E.ShiftRight):
            operand = self.leaf(e.b)
            if operand is None:
                raise _NotChain(to_text(e))
            got_base, steps = self.chain(e.a)
            return got_base, steps + [(AluOp.SHR, operand)]
        if isinstance(e, E.ShiftLeft):
            operand = self.leaf(e.b)
            if isinstance(operand, BufferLoad):
                raise self.fail(
                    f"{to_text(e)} shifts left by a tensor; the ALU shifts left only by an "
                    "immediate (SHR by a negative amount)"
                )
            if operand is None:
                raise _NotChain(to_text(e))
            got_base, steps = self.chain(e.a)
            return got_base, steps + [(AluOp.SHR, IntImm(-operand.value))]
        if isinstance(e, E.Sub):
            operand = self.leaf(e.b)
            if isinstance(operand, BufferLoad):
                raise self.fail(
                    f"{to_text(e)} subtracts a tensor; the ALU has MIN, MAX, ADD, SHR and MUL "
                    "(negate the operand where it is produced)"
                )
            if operand is None:
                raise _NotChain(to_text(e))
            got_base, steps = self.chain(e.a)
            return got_base, steps + [(AluOp.ADD, IntImm(-operand.value))]
        if isinstance(e, E.Div | E.FloorDiv | E.FloorMod):
            raise self.fail(
                f"{to_text(e)} divides; the ALU has MIN, MAX, ADD, SHR and MUL (divide by a "
                "power of two with a right shift)"
            )
        raise _NotChain(to_text(e))

    # ---- micro-op nests ----------------------------------------------------------------------
    def run(self) -> Stmt:
        dst = self.store.buffer
        if dst.scope is not self.acc:
            raise self.fail(
                f"the ALU writes the accumulator ({self.acc.name}); {dst.name} is in "
                f"{dst.scope.name}"
            )
        value = self.store.value
        if dst.dtype.name == "int8" and isinstance(value, E.Cast) and value.dtype.name == "int8":
            # an int8 stage kept in the accumulator (cache_write of an int8 result): the entry
            # holds the int32 value and stores take its low 8 bits, which are the cast
            value = value.value
        elif dst.dtype.name != "int32":
            raise self.fail(
                f"the accumulator holds int32 values; {dst.name} is {dst.dtype} (an int8 stage "
                "there must be a cast of an accumulator expression)"
            )
        try:
            base, steps = self.chain(value)
        except _NotChain as exc:
            raise self.fail(
                f"{to_text(value)} is not a chain of ALU operations (MIN, MAX, ADD, "
                f"SHR, MUL with an immediate or an accumulator tensor); cannot map {exc}"
            ) from None
        if not self.is_dst(base):
            if base.buffer == dst:
                raise self.fail("the stage reads its own output at another element")
            copy_base: list[Step] = [(AluOp.MUL, IntImm(0)), (AluOp.ADD, base)]
            steps = copy_base + steps
        elif not steps:
            # An in-place copy still rewrites the entries: the out buffer that stores read is
            # refreshed only by GEMM/ALU writes, not by accumulator loads (VTA emits SHR 0).
            steps = [(AluOp.SHR, IntImm(0))]
        imm_min, imm_max = limits(self.cfg).range("alu", "imm")
        for alu, operand in steps:
            if isinstance(operand, IntImm) and not imm_min <= operand.value <= imm_max:
                raise self.fail(
                    f"the {alu.name} immediate {operand.value} does not fit the ALU's signed "
                    f"imm field [{imm_min}, {imm_max}]"
                )
            if (
                isinstance(operand, BufferLoad)
                and operand.buffer == dst
                and not self.is_dst(operand)
            ):
                raise self.fail("the stage reads its own output at another element")
        init_steps: list[Step] = []
        if self.init is not None:
            init_steps = self.init_steps(base, steps)
        tensors = [o for _, o in steps if isinstance(o, BufferLoad)]
        loops = self.reduce_loops + self.loops  # the entry's lane loops stay innermost
        vars_ = [lp.var for lp in loops]
        exts = [lp.extent.value for lp in loops]  # type: ignore[attr-defined]
        lanes = self.cfg.batch * self.cfg.block_out
        indices = [self.store.indices[0]] + [t.indices[0] for t in tensors]
        _, elem = split_entry(analyze(vars_, exts, indices, self.what), lanes, self.what)
        zero = dict.fromkeys(elem, IntImm(0))
        dst_at = BufferLoad(dst, (substitute(self.store.indices[0], zero),))
        nests = []
        for k, (alu, operand) in enumerate(init_steps + steps):
            if isinstance(operand, IntImm):
                uop = alu_uop(alu, dst_at, operand, use_imm=True)
            else:
                src_at = BufferLoad(operand.buffer, (substitute(operand.indices[0], zero),))
                uop = alu_uop(alu, dst_at, src_at, use_imm=False)
            nests.append(self._loops(elem, uop, self.loops if k < len(init_steps) else loops))
        return seq(*nests)

    def init_steps(self, base: BufferLoad, steps: list[Step]) -> list[Step]:
        """The ALU steps of a reduction's init: the destination cleared (MUL by 0), then its
        identity added; the update must be one in-place step."""
        assert self.init is not None
        value = self.init.value
        if not isinstance(value, IntImm):
            raise self.fail(f"the reduction's init {to_text(value)} is not a constant")
        if not self.is_dst(base) or len(steps) != 1:
            raise self.fail(
                f"{to_text(self.store.value)} is not one in-place update of the reduction"
            )
        out: list[Step] = [(AluOp.MUL, IntImm(0))]
        if value.value:
            out.append((AluOp.ADD, value))
        imm_min, imm_max = limits(self.cfg).range("alu", "imm")
        if not imm_min <= value.value <= imm_max:
            raise self.fail(
                f"the reduction's identity {value.value} does not fit the ALU's signed imm "
                f"field [{imm_min}, {imm_max}] (the ALU reduces by sum; a max pool is a chain "
                "of MAX steps)"
            )
        return out

    def _loops(self, elem: list, uop: Stmt, loops: list[For] | None = None) -> Stmt:
        body = uop
        for lp in reversed(self.loops if loops is None else loops):
            if lp.var in elem:
                continue
            if lp.extent.value == 1:  # type: ignore[attr-defined]
                body = substitute(body, {lp.var: IntImm(0)})
                continue
            body = For(lp.var, lp.min, lp.extent, lp.kind, body, lp.thread, lp.annotations)
        return body


def lower_alu(cfg: HwConfig, body: Stmt, stage: str = "") -> Stmt:
    """The ALU micro-op nests of one ``alu`` stage named ``stage`` (see the module docstring)."""
    return _AluLowering(cfg, body, stage).run()


def make_inject_alu(cfg: HwConfig) -> Callable[[PrimFunc], PrimFunc]:
    """The ``inject_alu`` pass for ``cfg``."""

    def inject_alu(func: PrimFunc) -> PrimFunc:
        def post(n: Node) -> Node | None:
            if isinstance(n, Pragma) and n.key is ALU:
                return lower_alu(cfg, n.body, n.stage)
            return None

        return func.with_body(rewrite(func.body, post))

    return inject_alu
