"""The accelerator's memories and its GEMM instruction, declared from the hardware config.

The three on-chip SRAMs the compiler allocates are typed scopes: one addressable unit is one
SRAM entry (``inp``: batch×block_in int8, ``wgt``: block_out×block_in int8, ``acc``:
batch×block_out int32) and the capacity is the buffer size of the config.

The GEMM intrinsic is a tensor expression whose body *is* the instruction's meaning (one
micro-op): ``out[i, j] = sum_k int32(inp[i, k]) * int32(wgt[j, k])`` over an
``(batch, block_in)`` input tile and a ``(block_out, block_in)`` weight tile, accumulated into
a ``(batch, block_out)`` int32 tile. ``attrs["scopes"]`` says where each operand must live;
the tensorize pass matches scheduled loop nests against this declaration.

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> gemm = gemm_intrinsic(cfg)
    >>> gemm.name, gemm.axis_extents
    ('GEMM_1x4x4', (1, 4, 4))
    >>> [t.name for t in gemm.op.input_tensors()], gemm.attrs["scopes"]["wgt"].name
    (['inp', 'wgt'], 'local.wgt_buffer')
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from compiler import te
from compiler.ir.buffer import Scope
from compiler.schedule.intrin import TensorIntrin, decl_tensor_intrin
from isa import HwConfig

INP_SCOPE = "local.inp_buffer"
WGT_SCOPE = "local.wgt_buffer"
ACC_SCOPE = "local.acc_buffer"


@dataclass(frozen=True)
class Scopes:
    """The three SRAM scopes of one hardware configuration."""

    inp: Scope
    wgt: Scope
    acc: Scope

    def all(self) -> tuple[Scope, Scope, Scope]:
        return (self.inp, self.wgt, self.acc)

    def owns(self, scope: Scope) -> bool:
        """Whether ``scope`` is one of these three objects (compared by identity)."""
        return scope is self.inp or scope is self.wgt or scope is self.acc


@cache
def make_scopes(cfg: HwConfig) -> Scopes:
    """Scopes whose unit is one SRAM entry and whose capacity is the config's buffer size.

    One set of objects per configuration (equal configs share it), so passes compare scopes
    by identity and targets of different configs keep theirs apart.

    Example:
        >>> import isa
        >>> s = make_scopes(isa.load_config("vta-1x16x16"))
        >>> s.acc.unit_bits, s.acc.capacity_bytes
        (512, 131072)
        >>> make_scopes(isa.load_config("default")).acc is s.acc
        False
    """
    return Scopes(
        Scope(INP_SCOPE, unit_bits=cfg.inp_elem_bytes * 8, capacity_bits=cfg.inp_buf_bytes * 8),
        Scope(WGT_SCOPE, unit_bits=cfg.wgt_elem_bytes * 8, capacity_bits=cfg.wgt_buf_bytes * 8),
        Scope(ACC_SCOPE, unit_bits=cfg.acc_elem_bytes * 8, capacity_bits=cfg.acc_buf_bytes * 8),
    )


@cache
def gemm_intrinsic(cfg: HwConfig) -> TensorIntrin:
    """Declare (and register by name) the GEMM micro-op of ``cfg``'s core as a tensor
    expression; ``attrs["scopes"]`` holds the scope objects of ``cfg`` for each operand."""
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    scopes = make_scopes(cfg)
    inp = te.placeholder((b, bi), "int8", name="inp")
    wgt = te.placeholder((bo, bi), "int8", name="wgt")
    k = te.reduce_axis(bi, name="k")
    out = te.compute(
        (b, bo),
        lambda i, j: te.sum(inp[i, k].astype("int32") * wgt[j, k].astype("int32"), axis=k),
        name="out",
    )
    assert isinstance(out.op, te.ComputeOp)
    return decl_tensor_intrin(
        f"GEMM_{b}x{bi}x{bo}",
        out.op,
        attrs={"scopes": {"inp": scopes.inp, "wgt": scopes.wgt, "out": scopes.acc}},
    )
