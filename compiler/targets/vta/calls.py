"""The accelerator's operations as IR calls: DMA transfers, micro-ops and dependency tokens.

Target passes turn scheduled loop nests into these calls; the host code generator evaluates
them and drives the stream builder. Operands that live in a buffer are ``address_of`` a
buffer element, so buffer rewrites (flattening, virtual-thread copies) apply to them too.

* ``vta.load_<mem>(sram, dram, y_ext, x_ext, x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1)``
  fills ``y_ext`` rows of ``x_ext`` SRAM entries from ``sram``; the padding counts say how many
  leading/trailing rows and columns are zeros, the rest is read from DRAM starting at
  ``dram`` (the first element that is read) with ``x_stride`` elements between rows.
  Sizes are in entries/elements of the memory type; ``<mem>`` is inp, wgt, acc or acc8.
* ``vta.store_out(sram, dram, y_ext, x_ext, x_stride)``: the reverse, without padding.
* ``vta.uop_gemm(dst, src, wgt)``, ``vta.uop_gemm_reset(dst)``: one GEMM micro-op.
* ``vta.uop_alu_<op>(dst, src)`` / ``vta.uop_alu_<op>_imm(dst, imm)``: one ALU micro-op.
* ``vta.dep_push(from, to)`` / ``vta.dep_pop(from, to)``: dependency tokens between modules
  (1 load, 2 compute, 3 store, as in VTA).

Example:
    >>> import isa
    >>> from compiler.ir import Buffer, to_text
    >>> from compiler.targets.vta.intrin import make_scopes
    >>> acc = Buffer("acc", (64,), "int32", make_scopes(isa.load_config("default")).acc)
    >>> to_text(gemm_reset_uop(acc[16]))
    'vta.uop_gemm_reset(address_of(acc[16]))'
    >>> to_text(dep_push(2, 1))
    'vta.dep_push(2, 1)'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from compiler.ir import op
from compiler.ir.dtype import int32
from compiler.ir.expr import ADDRESS_OF, BufferLoad, Call, CallOp, Expr, IntImm
from compiler.ir.stmt import Evaluate, Stmt
from isa import AluOp, MemType


class Module(StrEnum):
    """The accelerator's three modules (VTA's pipeline stages); passes compare members."""

    LOAD = "load"
    COMPUTE = "compute"
    STORE = "store"

    def __repr__(self) -> str:
        # IR text shows ``pragma coproc_scope = 'load'`` as before
        return repr(self.value)


#: Module ids of the dependency calls.
MODULE_ID = {Module.LOAD: 1, Module.COMPUTE: 2, Module.STORE: 3}
MODULE_NAME = {v: k for k, v in MODULE_ID.items()}

LOAD_OPS = {
    MemType.INP: CallOp("vta.load_inp", pure=False),
    MemType.WGT: CallOp("vta.load_wgt", pure=False),
    MemType.ACC: CallOp("vta.load_acc", pure=False),
    MemType.ACC8: CallOp("vta.load_acc8", pure=False),
}
STORE_OP = CallOp("vta.store_out", pure=False)
GEMM_UOP = CallOp("vta.uop_gemm", pure=False)
GEMM_RESET_UOP = CallOp("vta.uop_gemm_reset", pure=False)
ALU_UOPS = {
    (alu, imm): CallOp(f"vta.uop_alu_{alu.name.lower()}{'_imm' if imm else ''}", pure=False)
    for alu in AluOp
    for imm in (False, True)
}
DEP_PUSH = CallOp("vta.dep_push", pure=False)
DEP_POP = CallOp("vta.dep_pop", pure=False)

_MEM_OF_LOAD = {v: k for k, v in LOAD_OPS.items()}
_ALU_OF = {v: k for k, v in ALU_UOPS.items()}
UOP_OPS = frozenset({GEMM_UOP, GEMM_RESET_UOP, *ALU_UOPS.values()})

#: Which module runs each call.
_MODULE_OF = {
    LOAD_OPS[MemType.INP]: Module.LOAD,
    LOAD_OPS[MemType.WGT]: Module.LOAD,
    LOAD_OPS[MemType.ACC]: Module.COMPUTE,
    LOAD_OPS[MemType.ACC8]: Module.COMPUTE,
    STORE_OP: Module.STORE,
    **dict.fromkeys(UOP_OPS, Module.COMPUTE),
}


def _call(callop: CallOp, args: list[Any]) -> Stmt:
    return Evaluate(Call(callop, tuple(op.convert(a) for a in args), int32))


def address(load: Expr) -> Expr:
    """``address_of`` a buffer element (passes through an existing ``address_of``)."""
    if isinstance(load, Call) and load.op == ADDRESS_OF:
        return load
    assert isinstance(load, BufferLoad), load
    return op.address_of(load)


# ---- builders ---------------------------------------------------------------------------------
def dma_load(
    mem: MemType,
    sram: Expr,
    dram: Expr,
    y_ext: Expr | int,
    x_ext: Expr | int,
    x_stride: Expr | int,
    pads: tuple[Expr | int, Expr | int, Expr | int, Expr | int] = (0, 0, 0, 0),
) -> Stmt:
    """A 2-D load; ``pads`` are (y_pad_0, y_pad_1, x_pad_0, x_pad_1)."""
    return _call(LOAD_OPS[mem], [address(sram), address(dram), y_ext, x_ext, x_stride, *pads])


def dma_store(sram: Expr, dram: Expr, y_ext: Expr | int, x_ext: Expr | int, x_stride: Expr | int
              ) -> Stmt:  # fmt: skip
    """A 2-D store of out-buffer entries to DRAM."""
    return _call(STORE_OP, [address(sram), address(dram), y_ext, x_ext, x_stride])


def gemm_uop(dst: Expr, src: Expr, wgt: Expr) -> Stmt:
    return _call(GEMM_UOP, [address(dst), address(src), address(wgt)])


def gemm_reset_uop(dst: Expr) -> Stmt:
    return _call(GEMM_RESET_UOP, [address(dst)])


def alu_uop(alu: AluOp, dst: Expr, src: Expr | int, use_imm: bool) -> Stmt:
    """An ALU micro-op: ``src`` is an accumulator element, or the immediate when ``use_imm``."""
    arg = src if use_imm else address(src)  # type: ignore[arg-type]
    return _call(ALU_UOPS[(alu, use_imm)], [address(dst), arg])


def dep_push(src: int, dst: int) -> Stmt:
    return _call(DEP_PUSH, [src, dst])


def dep_pop(src: int, dst: int) -> Stmt:
    return _call(DEP_POP, [src, dst])


# ---- inspection -------------------------------------------------------------------------------
def vta_call(stmt: object) -> Call | None:
    """The accelerator call a statement evaluates, or None."""
    if isinstance(stmt, Evaluate) and isinstance(stmt.value, Call):
        c = stmt.value
        if c.op.name.startswith("vta."):
            return c
    return None


def module_of_call(call: Call) -> Module | None:
    """The module that executes ``call``; None for token calls."""
    return _MODULE_OF.get(call.op)


def load_memory_type(call: Call) -> MemType | None:
    return _MEM_OF_LOAD.get(call.op)


def is_uop(call: Call) -> bool:
    return call.op in UOP_OPS


def address_load(e: Expr) -> BufferLoad:
    """The buffer element an ``address_of`` argument names."""
    if not (isinstance(e, Call) and e.op == ADDRESS_OF and isinstance(e.args[0], BufferLoad)):
        raise TypeError(f"expected address_of(buffer[index]), got {e!r}")
    return e.args[0]


def dep_args(call: Call) -> tuple[int, int]:
    a, b = call.args
    assert isinstance(a, IntImm) and isinstance(b, IntImm)
    return a.value, b.value


class UopKind(StrEnum):
    """Which instruction a micro-op kernel runs under (compared by identity in passes)."""

    GEMM = "gemm"
    GEMM_RESET = "gemm_reset"
    ALU = "alu"


@dataclass(frozen=True)
class UopSignature:
    """What every micro-op of one GEMM/ALU instruction shares (fields of the instruction).

    Example:
        >>> UopSignature(UopKind.ALU, AluOp.SHR, True, 8)
        alu shr imm=8
    """

    kind: UopKind
    alu: AluOp | None = None
    use_imm: bool = False
    imm: int = 0

    def __repr__(self) -> str:
        if self.kind is not UopKind.ALU:
            return self.kind.value
        assert self.alu is not None
        return f"alu {self.alu.name.lower()}" + (f" imm={self.imm}" if self.use_imm else "")


def uop_signature(call: Call) -> UopSignature:
    """The instruction-level fields of a micro-op call (an ALU immediate must be constant)."""
    if call.op == GEMM_UOP:
        return UopSignature(UopKind.GEMM)
    if call.op == GEMM_RESET_UOP:
        return UopSignature(UopKind.GEMM_RESET)
    alu, use_imm = _ALU_OF[call.op]
    imm = 0
    if use_imm:
        arg = call.args[1]
        if not isinstance(arg, IntImm):
            from .errors import VTATargetError

            raise VTATargetError(
                f"ALU {alu.name} immediate {arg!r} is not a constant; the imm field is part of "
                "the instruction"
            )
        imm = arg.value
    return UopSignature(UopKind.ALU, alu, use_imm, imm)


def uop_operands(call: Call) -> list[BufferLoad]:
    """The buffer operands of a micro-op call (dst first)."""
    if call.op == GEMM_UOP:
        return [address_load(a) for a in call.args]
    if call.op == GEMM_RESET_UOP:
        return [address_load(call.args[0])]
    _, use_imm = _ALU_OF[call.op]
    return [address_load(call.args[0])] + ([] if use_imm else [address_load(call.args[1])])
