"""Tensorize: match scheduled loop nests against the GEMM intrinsic's declaration.

A ``Tensorize`` region holds the loop nest as scheduled. The matcher compares it with the
intrinsic's tensor expression, node by node: the update must be ``C = C + body`` with ``body``
the intrinsic's reduction body (casts, product, operands in order or swapped), every operand a
buffer in the scope the intrinsic binds it to, with the intrinsic's dtype, whose trailing
dimensions are exactly one tile and are indexed by the covered loops, and every covered loop
must have the extent of the intrinsic axis it plays. The reduction's init nest (``C = 0``)
becomes a reset micro-op. Whatever does not match raises :class:`VTATargetError` saying what
differs.

Before / after (``default`` core, 1x4x4)::

    tensorize GEMM_1x4x4 at conv over (bi, oi, rci):
      for bi in range(1):
        for oi in range(4):
          for rci in range(4):
            conv[.., bi, oi] = conv[.., bi, oi] + int32(pad[.., bi, rci])*int32(w[.., oi, rci])

    vta.uop_gemm(address_of(conv[.., 0, 0]), address_of(pad[.., 0, 0]), address_of(w[.., 0, 0]))

Example:
    >>> import isa
    >>> from compiler.targets.vta.intrin import gemm_intrinsic
    >>> gemm = gemm_intrinsic(isa.load_config("default"))
    >>> make_tensorize_pass(gemm).__name__
    'vta_tensorize'
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.ir import expr as E
from compiler.ir.buffer import Scope
from compiler.ir.expr import BufferLoad, Expr, IntImm, Var
from compiler.ir.functor import rewrite, used_vars
from compiler.ir.node import Node
from compiler.ir.printer import to_text
from compiler.ir.stmt import BufferStore, For, PrimFunc, Stmt, Tensorize
from compiler.schedule.intrin import TensorIntrin
from compiler.te.tensor import SUM, Reduce, TensorRead

from ..calls import gemm_reset_uop, gemm_uop
from ..errors import VTATargetError

_COMMUTATIVE = (E.Add, E.Mul, E.Min, E.Max)


class _Mismatch(Exception):
    """Internal: one way of matching failed (another operand order may still match)."""


class _Matcher:
    def __init__(self, region: Tensorize, intrin: TensorIntrin) -> None:
        self.region = region
        self.intrin = intrin
        self.where = f"tensorize {intrin.name} at stage {region.stage}"
        self.scopes: dict[str, Scope] = dict(intrin.attrs.get("scopes", {}))
        self.mapping: dict[Var, Var] = {}  # intrinsic axis var -> nest loop var
        self.bound: dict[str, BufferLoad] = {}
        self.loops: list[For] = []
        self.covered: set[Var] = set()
        self.shape_errors: list[str] = []

    def fail(self, why: str) -> VTATargetError:
        return VTATargetError(f"{self.where}: {why}")

    # ---- the nest -------------------------------------------------------------------------
    def nest(self) -> BufferStore:
        s: Stmt = self.region.body
        while isinstance(s, For):
            self.loops.append(s)
            s = s.body
        if not isinstance(s, BufferStore):
            raise self.fail(
                "the tensorized loops must form a perfect nest around one store; found "
                f"{type(s).__name__}:\n{to_text(s)}"
            )
        allowed = set(self.region.loop_vars)
        for lp in self.loops:
            if lp.var not in allowed:
                raise self.fail(f"loop {lp.var.name} is not one of the tensorized axes")
            if not isinstance(lp.extent, IntImm) or not (
                isinstance(lp.min, IntImm) and lp.min.value == 0
            ):
                raise self.fail(
                    f"loop {lp.var.name} has the non-constant range "
                    f"[{to_text(lp.min)}, {to_text(lp.min)} + {to_text(lp.extent)})"
                )
        self.covered = {lp.var for lp in self.loops}
        return s

    def extent_of(self, v: Var) -> int:
        for lp in self.loops:
            if lp.var == v:
                assert isinstance(lp.extent, IntImm)
                return lp.extent.value
        return 1

    # ---- operands -------------------------------------------------------------------------
    def operand(self, role: str, load: BufferLoad | BufferStore, pattern: tuple[Expr, ...],
                shape: tuple[int, ...], dtype: object) -> None:  # fmt: skip
        buf = load.buffer
        want = self.scopes.get(role)
        what = f"operand {role!r} ({buf.name})" if role != "out" else f"the output {buf.name}"
        if want is not None and buf.scope is not want:
            raise _Mismatch(
                f"{what} is in scope {buf.scope.name}, the intrinsic needs {want.name}"
                + (" of this target's configuration" if buf.scope.name == want.name else "")
            )
        if buf.dtype != dtype:
            raise _Mismatch(f"{what} has dtype {buf.dtype}, the intrinsic's {role} is {dtype}")
        nd = len(shape)
        if buf.ndim < nd:
            raise _Mismatch(f"{what} has fewer dimensions than one {role} tile {tuple(shape)}")
        dims = tuple(_const(d) for d in buf.shape[-nd:])
        if dims != tuple(shape):
            # reported after the loop extents, which usually say more about the mismatch
            self.shape_errors.append(
                f"{what}: its last dimensions {dims} are not one {role} tile {tuple(shape)}; "
                "pack the tensor so that a tile is its innermost block"
            )
        lead, trail = load.indices[:-nd], load.indices[-nd:]
        for k, (p, e) in enumerate(zip(pattern, trail, strict=True)):
            if not isinstance(p, Var):
                raise _Mismatch(f"the intrinsic indexes {role} with {to_text(p)}")
            expected = self.mapping.get(p)
            if expected is None:
                if isinstance(e, IntImm) and e.value == 0 and shape[k] == 1:
                    continue
                if not isinstance(e, Var) or e not in self.covered or e in self.mapping.values():
                    raise _Mismatch(
                        f"{what} is indexed by {to_text(e)} in its tile dimension {k}, where the "
                        f"intrinsic's axis {p.name} needs one of the tensorized loops of its own"
                    )
                self.mapping[p] = e
            elif e != expected and not (isinstance(e, IntImm) and e.value == 0 and shape[k] == 1):
                raise _Mismatch(
                    f"{what} is indexed by {to_text(e)} in its tile dimension {k} but the "
                    f"intrinsic's axis {p.name} is loop {expected.name} there (not element "
                    "aligned)"
                )
        for e in lead:
            inner = used_vars(e) & self.covered
            if inner:
                names = ", ".join(sorted(v.name for v in inner))
                raise _Mismatch(
                    f"{what}: the outer index {to_text(e)} uses the tensorized loop(s) {names}; "
                    "a micro-op must address whole tiles (element-aligned indices)"
                )
        if role in self.bound and self.bound[role] != load:
            raise _Mismatch(f"operand {role!r} is read at two different places")
        if isinstance(load, BufferLoad):
            self.bound[role] = load

    # ---- structural match of the reduction body --------------------------------------------
    def match(self, p: Expr, e: Expr) -> None:
        if isinstance(p, TensorRead):
            if not isinstance(e, BufferLoad):
                raise _Mismatch(f"expected a read of {p.tensor.name}, found {to_text(e)}")
            t = p.tensor
            self.operand(t.name, e, p.indices, t.shape, t.dtype)
            return
        if type(p) is not type(e):
            raise _Mismatch(
                f"the intrinsic computes {_describe(p)} where the nest has {to_text(e)}"
            )
        if isinstance(p, E.Cast):
            assert isinstance(e, E.Cast)
            if p.dtype != e.dtype:
                raise _Mismatch(f"cast to {e.dtype} where the intrinsic casts to {p.dtype}")
            self.match(p.value, e.value)
            return
        if isinstance(p, E.BinaryOp):
            saved = (dict(self.mapping), dict(self.bound), list(self.shape_errors))
            try:
                self.match(p.a, e.a)  # type: ignore[attr-defined]
                self.match(p.b, e.b)  # type: ignore[attr-defined]
                return
            except _Mismatch as first:
                if not isinstance(p, _COMMUTATIVE):
                    raise
                self.mapping, self.bound = dict(saved[0]), dict(saved[1])
                self.shape_errors = list(saved[2])
                try:
                    self.match(p.a, e.b)  # type: ignore[attr-defined]
                    self.match(p.b, e.a)  # type: ignore[attr-defined]
                except _Mismatch:
                    raise first from None
            return
        if p != e:
            raise _Mismatch(f"the intrinsic has {to_text(p)} where the nest has {to_text(e)}")

    def check_extents(self) -> None:
        op = self.intrin.op
        for iv in op.axis + op.reduce_axis:
            v = self.mapping.get(iv.var)
            if v is None:
                continue
            got = self.extent_of(v)
            if got != iv.extent:
                kind = "reduction" if iv.is_reduce else "axis"
                raise self.fail(
                    f"loop {v.name} has extent {got} but the intrinsic's {kind} {iv.name} is "
                    f"{iv.extent}"
                )
        mapped = set(self.mapping.values())
        for lp in self.loops:
            if lp.var not in mapped:
                raise self.fail(f"loop {lp.var.name} is not an axis of the intrinsic")
        if self.shape_errors:
            raise self.fail(self.shape_errors[0])

    # ---- the whole region ------------------------------------------------------------------
    def run(self) -> Stmt:
        try:
            return self._run()
        except _Mismatch as exc:
            raise self.fail(str(exc)) from None

    def _run(self) -> Stmt:
        op = self.intrin.op
        store = self.nest()
        out_pattern = tuple(iv.var for iv in op.axis)
        self.operand("out", store, out_pattern, op.shape, op.dtype)
        if not isinstance(op.body, Reduce) or op.body.combiner != SUM:
            raise self.fail("only sum reductions are supported as intrinsics")
        value = store.value
        identity = op.body.combiner.identity(op.dtype)
        if isinstance(value, IntImm) and value == identity:
            self.check_extents()
            if any(lp.var not in [self.mapping.get(iv.var) for iv in op.axis] for lp in self.loops):
                raise self.fail("the init nest covers loops that are not output axes")
            return gemm_reset_uop(_tile_base(store, len(op.axis)))
        acc = BufferLoad(store.buffer, store.indices)
        if isinstance(value, E.Add) and value.a == acc:
            body = value.b
        elif isinstance(value, E.Add) and value.b == acc:
            body = value.a
        else:
            raise self.fail(
                f"the update must accumulate into {store.buffer.name}[...] with '+' (the "
                f"intrinsic is a sum); found {to_text(value)}"
            )
        self.match(op.body.source, body)
        self.check_extents()
        inp, wgt = self.bound.get("inp"), self.bound.get("wgt")
        if inp is None or wgt is None:
            raise self.fail("the nest does not read both an input and a weight tile")
        ndim = {t.name: t.ndim for t in op.input_tensors()}
        return gemm_uop(
            _tile_base(store, len(op.axis)),
            _tile_base(inp, ndim["inp"]),
            _tile_base(wgt, ndim["wgt"]),
        )


def _const(e: Expr) -> int | Expr:
    return e.value if isinstance(e, IntImm) else e


def _describe(p: Expr) -> str:
    return to_text(p) if not isinstance(p, TensorRead) else p.tensor.name


def _tile_base(access: BufferLoad | BufferStore, nd: int) -> BufferLoad:
    """The access of the tile's first element: trailing tile indices set to zero."""
    lead = access.indices[:-nd]
    return BufferLoad(access.buffer, tuple(lead) + (IntImm(0),) * nd)


def match_tensorize(region: Tensorize, intrin: TensorIntrin) -> Stmt:
    """Replace one tensorize region by the micro-op it matches (or raise why it does not)."""
    return _Matcher(region, intrin).run()


def make_tensorize_pass(intrin: TensorIntrin) -> Callable[[PrimFunc], PrimFunc]:
    """The ``vta_tensorize`` pass for the target whose GEMM core is ``intrin``."""

    def vta_tensorize(func: PrimFunc) -> PrimFunc:
        def post(n: Node) -> Node | None:
            if not isinstance(n, Tensorize):
                return None
            got = n.intrin
            if getattr(got, "name", None) != intrin.name:
                raise VTATargetError(
                    f"stage {n.stage} is tensorized with {getattr(got, 'name', got)!r} but this "
                    f"target's GEMM core is {intrin.name}"
                )
            return match_tensorize(n, intrin)

        return func.with_body(rewrite(func.body, post))

    return vta_tensorize
