"""Bound inference: the region of each stage that must be computed, and its loop extents.

A stage computed at loop ``X`` of another stage computes, per iteration of ``X`` and of the loops
outside it, the union of what its consumers read in that iteration: loops outside ``X`` are fixed,
loops inside it range over their extents. Root stages compute their whole domain.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> from compiler.lower.graph import analyze
    >>> from compiler.ir.printer import to_text
    >>> A = te.placeholder((16,), name="A")
    >>> B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    >>> C = te.compute((14,), lambda i: B[i] + B[i + 2], name="C")
    >>> s = create_schedule(C)
    >>> xo, xi = s[C].split("i", factor=7)
    >>> s[B].compute_at(s[C], xo)
    >>> bounds = infer_bounds(analyze(s))
    >>> b = bounds[s[B]]
    >>> to_text(b.root_min[B.op.axis[0]]), to_text(b.root_extent[B.op.axis[0]])
    ('i.outer*7', '9')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.arith.bounds import tight_upper_bound
from compiler.arith.interval import Interval, eval_interval
from compiler.arith.simplify import simplify
from compiler.errors import LoweringError
from compiler.ir import op
from compiler.ir.buffer import SHARED
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import substitute, var_set
from compiler.lower.graph import Graph, bound_order
from compiler.schedule.relations import AttachAt, Fuse, Split
from compiler.schedule.stage import Stage
from compiler.te.tensor import ComputeOp, IterVar

Env = dict[Var, tuple[int, int]]

#: How many rounds of relaxation to allow (nesting depth of compute_at chains).
_MAX_RELAX_ROUNDS = 64


@dataclass
class StageBound:
    """Bounds of one stage. ``root_value[r]`` is the offset of root axis ``r`` from
    ``root_min[r]`` as a function of the stage's loop variables."""

    root_min: dict[IterVar, Expr] = field(default_factory=dict)
    root_extent: dict[IterVar, Expr] = field(default_factory=dict)
    region_extent: dict[IterVar, Expr] = field(default_factory=dict)
    leaf_extent: dict[IterVar, Expr] = field(default_factory=dict)
    all_extent: dict[IterVar, Expr] = field(default_factory=dict)
    root_value: dict[IterVar, Expr] = field(default_factory=dict)
    guards: list[Expr] = field(default_factory=list)
    outer_env: Env = field(default_factory=dict)
    env: Env = field(default_factory=dict)
    shape: tuple[int, ...] = ()

    def root_expr(self, iv: IterVar) -> Expr:
        """The value of root axis ``iv`` in terms of loop variables."""
        return simplify(self.root_min[iv] + self.root_value[iv], self.env)


def _upper(e: Expr, env: Env) -> int | None:
    return tight_upper_bound(e, env)


def _loop_range(extent: Expr, env: Env) -> tuple[int, int]:
    hi = _upper(extent, env)
    if hi is None:
        raise LoweringError(f"cannot bound the loop extent {extent!r} by a constant")
    return (0, max(hi - 1, 0))


def infer_bounds(g: Graph) -> dict[Stage, StageBound]:
    """Bounds of every non-placeholder stage of ``g``."""
    bounds: dict[Stage, StageBound] = {}
    for st in bound_order(g):
        if st.is_placeholder:
            continue
        bounds[st] = _infer_stage(g, st, bounds)
    return bounds


def _outer_env(g: Graph, st: Stage, bounds: dict[Stage, StageBound]) -> Env:
    env: Env = {}
    for owner, iv in g.path[st]:
        b = bounds[owner]
        env.update(b.outer_env)
        env[iv.var] = b.env[iv.var]
    return env


def _infer_stage(g: Graph, st: Stage, bounds: dict[Stage, StageBound]) -> StageBound:
    op = st.op
    assert isinstance(op, ComputeOp)
    b = StageBound()
    b.outer_env = _outer_env(g, st, bounds)
    env = dict(b.outer_env)
    if isinstance(st.attach, AttachAt):
        region = _consumer_region(g, st, bounds, env)
    else:
        region = [Interval.const(0, d - 1) for d in op.shape]
    for iv, iv_range in zip(op.axis, region, strict=True):
        b.root_min[iv] = iv_range.lo  # type: ignore[assignment]
        b.root_extent[iv] = simplify(iv_range.hi - iv_range.lo + 1, env)  # type: ignore[operator]
    for iv in op.reduce_axis:
        b.root_min[iv] = IntImm(iv.min)
        b.root_extent[iv] = IntImm(iv.extent)
    shape = []
    for iv in op.axis:
        ext = b.root_extent[iv]
        hi = _upper(ext, env)
        if hi is None or hi <= 0:
            raise LoweringError(
                f"cannot bound the region of stage {st.name} along axis {iv.name}: extent {ext!r}"
            )
        hi = min(hi, iv.extent)
        shape.append(hi)
        b.region_extent[iv] = ext
        if not isinstance(ext, IntImm):
            # Loops run over the constant bound of a region that varies (at the edges of a
            # tile); a guard skips the part outside it. Constant extents keep splits and
            # fuses free of symbolic division.
            b.root_extent[iv] = IntImm(hi)
    b.shape = tuple(shape)
    _pass_down(st, b, env)
    b.env = env
    _pass_up(st, b)
    for iv, ext in b.region_extent.items():
        if not isinstance(ext, IntImm):
            guard = simplify(b.root_value[iv] < ext, b.env)
            if not (isinstance(guard, IntImm) and guard.value == 1):
                b.guards.append(guard)
    return b


def _pass_down(st: Stage, b: StageBound, env: Env) -> None:
    """Leaf extents from root extents, outermost relations first; also fills ``env``."""
    ext = dict(b.root_extent)
    for rel in st.relations:
        if isinstance(rel, Split):
            parent = ext[rel.parent]
            if rel.factor is not None:
                ext[rel.outer] = simplify(op.floordiv(parent + (rel.factor - 1), rel.factor), env)
                ext[rel.inner] = IntImm(rel.factor)
            elif rel.nparts is not None:
                ext[rel.outer] = IntImm(rel.nparts)
                ext[rel.inner] = simplify(op.floordiv(parent + (rel.nparts - 1), rel.nparts), env)
            else:
                raise LoweringError(
                    f"stage {st.name}: the split of axis {rel.parent.name} has neither a "
                    "factor nor nparts"
                )
        else:
            ext[rel.fused] = simplify(ext[rel.outer] * ext[rel.inner], env)
    for iv in st.leaf_iter_vars:
        b.leaf_extent[iv] = ext[iv]
        env[iv.var] = _loop_range(ext[iv], env)
    b.all_extent = ext


def _pass_up(st: Stage, b: StageBound) -> None:
    """Root values from leaf variables, innermost relations first; records split guards."""
    ext = b.all_extent
    val: dict[IterVar, Expr] = {iv: iv.var for iv in st.leaf_iter_vars}
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            factor = IntImm(rel.factor) if rel.factor is not None else ext[rel.inner]
            val[rel.parent] = simplify(val[rel.outer] * factor + val[rel.inner], b.env)
            guard = simplify(val[rel.parent] < ext[rel.parent], b.env)
            if not (isinstance(guard, IntImm) and guard.value == 1):
                b.guards.append(guard)
        elif isinstance(rel, Fuse):
            val[rel.outer] = simplify(op.floordiv(val[rel.fused], ext[rel.inner]), b.env)
            val[rel.inner] = simplify(op.floormod(val[rel.fused], ext[rel.inner]), b.env)
    for iv in st.root_iter_vars:
        b.root_value[iv] = val[iv]


# Consumer regions ----------------------------------------------------------------------------


def _relax(e: Expr, dom: dict[Var, Interval], env: Env, upper: bool) -> Expr | None:
    """Bound ``e`` over the relaxed variables in ``dom``, repeating while bounds still mention
    relaxed variables (inner loop extents depend on outer relaxed loops)."""
    cur: Expr | None = e
    for _ in range(_MAX_RELAX_ROUNDS):
        if cur is None:
            return None
        live = {v: dom[v] for v in var_set(cur) if v in dom}
        if not live:
            return cur
        iv = eval_interval(cur, live, env)
        cur = iv.hi if upper else iv.lo
    raise LoweringError(f"bound inference did not converge on {e!r}")


def _relaxed_for_block(st: Stage, owner: Stage, iv: IterVar) -> bool:
    """TVM's rule for memory shared by a thread block: a ``shared`` stage computed inside
    loops bound to ``threadIdx.*`` (or virtual threads) holds what every thread of the block
    reads, so those loops are relaxed over their range instead of fixed."""
    if st.scope is not SHARED:
        return False
    attr = owner.iter_attrs.get(iv)
    thread = attr.thread if attr is not None else None
    return thread is not None and (thread.tag.startswith("threadIdx.") or thread.is_virtual)


def _consumer_region(
    g: Graph, st: Stage, bounds: dict[Stage, StageBound], env: Env
) -> list[Interval]:
    op = st.op
    assert isinstance(op, ComputeOp)
    fixed = {iv.var for owner, iv in g.path[st] if not _relaxed_for_block(st, owner, iv)}
    region: list[Interval | None] = [None] * len(op.axis)
    for consumer in g.consumers[st]:
        cb = bounds[consumer]
        loops = g.path[consumer] + [(consumer, iv) for iv in consumer.leaf_iter_vars]
        dom: dict[Var, Interval] = {}
        relax_env: Env = dict(env)
        for owner, iv in loops:
            if iv.var in fixed:
                continue
            ext = bounds[owner].leaf_extent[iv]
            dom[iv.var] = Interval(IntImm(0), simplify(ext - 1))
            relax_env[iv.var] = bounds[owner].env[iv.var]
        root_dom: dict[Var, Interval] = {}
        point: dict[Var, Expr] = {}
        for r in consumer.root_iter_vars:
            value = simplify(cb.root_min[r] + cb.root_value[r], relax_env)
            if not any(v in dom for v in var_set(value)):
                point[r.var] = value
                continue
            lo = _relax(value, dom, env, upper=False)
            hi = _relax(value, dom, env, upper=True)
            lo_dom = _relax(cb.root_min[r], dom, env, upper=False)
            true_ext = cb.region_extent.get(r, cb.root_extent[r])
            hi_dom = _relax(simplify(cb.root_min[r] + true_ext - 1), dom, env, upper=True)
            root_dom[r.var] = Interval(lo, hi).intersect(Interval(lo_dom, hi_dom), env)
        for read in g.reads_of(consumer, st):
            for d, index in enumerate(read.indices):
                index = substitute(index, point)
                span = eval_interval(index, root_dom, env) if root_dom else Interval.point(index)
                lo = None if span.lo is None else _relax(span.lo, dom, env, upper=False)
                hi = None if span.hi is None else _relax(span.hi, dom, env, upper=True)
                cur = Interval(lo, hi)
                prev = region[d]
                region[d] = cur if prev is None else prev.union(cur, env)
    out = []
    for dim, extent in zip(region, op.shape, strict=True):
        full = Interval.const(0, extent - 1)
        if dim is None:
            out.append(full)
            continue
        clamped = dim.intersect(full, env)
        lo = clamped.lo if clamped.lo is not None else full.lo
        hi = clamped.hi if clamped.hi is not None else full.hi
        out.append(Interval(lo, hi))
    return out
