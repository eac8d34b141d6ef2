"""A stage: the schedule of one operation (its loop axes, their attributes, its attach point).

The primitives live in :mod:`compiler.schedule.primitives` (one module per family); the methods
here record each call and delegate.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((8, 8), name="A")
    >>> B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    >>> s = create_schedule(B)
    >>> [a.name for a in s[B].leaf_iter_vars]
    ['i', 'j']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.errors import ScheduleError
from compiler.ir.buffer import GLOBAL, Scope
from compiler.ir.pragma import PragmaKey
from compiler.ir.stmt import ThreadAxis
from compiler.schedule.primitives import annotate, attach, loop
from compiler.schedule.relations import ROOT, Attach, Fuse, IterAttr, Relation, Split
from compiler.schedule.trace import recorded
from compiler.te.tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor

if TYPE_CHECKING:
    from compiler.schedule.intrin import TensorIntrin
    from compiler.schedule.schedule import Schedule

AxisRef = IterVar | str


class Stage:
    """Schedule state of one operation."""

    def __init__(self, schedule: Schedule, op: Operation, name: str) -> None:
        self.schedule = schedule
        self.name = name
        self.origin_op = op
        self.op: Operation = op
        self.is_output = False
        # a scope object, or the name of a target's scope (resolved when lowering for it)
        self.scope: Scope | str = GLOBAL
        self.attach: Attach = ROOT
        self.relations: list[Relation] = []
        self.iter_attrs: dict[IterVar, IterAttr] = {}
        self._names: dict[IterVar, str] = {}
        self.all_iter_vars: list[IterVar] = []
        self.leaf_iter_vars: list[IterVar] = []
        self.reset_axes(op)

    # Axis bookkeeping -----------------------------------------------------------------------
    def reset_axes(self, op: Operation) -> None:
        """Start over from the root axes of ``op`` (used when a cache rewrites the stage)."""
        self.op = op
        self.relations = []
        self.iter_attrs = {}
        self._names = {}
        roots = list(op.axis + op.reduce_axis) if isinstance(op, ComputeOp) else []
        self.all_iter_vars = []
        for iv in roots:
            self.add_axis(iv, iv.name)
        self.leaf_iter_vars = list(roots)

    def add_axis(self, iv: IterVar, name: str) -> None:
        taken = set(self._names.values())
        unique, k = name, 1
        while unique in taken:
            unique = f"{name}_{k}"
            k += 1
        self._names[iv] = unique
        self.all_iter_vars.append(iv)

    @property
    def root_iter_vars(self) -> tuple[IterVar, ...]:
        op = self.op
        return tuple(op.axis + op.reduce_axis) if isinstance(op, ComputeOp) else ()

    def axis_name(self, iv: IterVar) -> str:
        try:
            return self._names[iv]
        except KeyError:
            raise ScheduleError(
                f"axis {iv.name} does not belong to stage {self.name}; its axes are "
                f"{self.axis_names()}"
            ) from None

    def axis_names(self) -> list[str]:
        return [self._names[iv] for iv in self.leaf_iter_vars]

    def axis(self, ref: AxisRef) -> IterVar:
        """Resolve an axis by object or name (any axis ever created in this stage)."""
        if isinstance(ref, IterVar):
            if ref in self._names:
                return ref
            raise ScheduleError(
                f"axis {ref.name} does not belong to stage {self.name}; its loop axes are "
                f"{self.axis_names()}"
            )
        for iv, name in self._names.items():
            if name == ref:
                return iv
        raise ScheduleError(
            f"stage {self.name} has no axis named {ref!r}; its loop axes are {self.axis_names()}"
        )

    def leaf(self, ref: AxisRef, primitive: str) -> IterVar:
        """Resolve ``ref`` and require it to be a current loop (leaf) axis."""
        iv = self.axis(ref)
        if iv not in self.leaf_iter_vars:
            children = [self._names[x] for x in self._successors(iv)]
            how = f" (it became {', '.join(children)})" if children else ""
            raise ScheduleError(
                f"{primitive} on stage {self.name}: axis {self._names[iv]} is no longer a loop"
                f"{how}; current loop axes are {self.axis_names()}"
            )
        return iv

    def _successors(self, iv: IterVar) -> list[IterVar]:
        out: list[IterVar] = []
        for r in self.relations:
            if isinstance(r, Split) and r.parent is iv:
                out += [r.outer, r.inner]
            elif isinstance(r, Fuse) and iv in (r.outer, r.inner):
                out.append(r.fused)
        return out

    def iter_attr(self, ref: AxisRef) -> IterAttr:
        iv = self.axis(ref)
        return self.iter_attrs.setdefault(iv, IterAttr())

    @property
    def is_placeholder(self) -> bool:
        return isinstance(self.op, PlaceholderOp)

    @property
    def output_tensor(self) -> Tensor:
        return self.op.output()

    def __repr__(self) -> str:
        return f"Stage({self.name}, axes={self.axis_names()})"

    # Loop transformations -------------------------------------------------------------------
    @recorded
    def split(
        self, axis: AxisRef, factor: int | None = None, nparts: int | None = None
    ) -> tuple[IterVar, IterVar]:
        """Split ``axis`` into ``(outer, inner)``; see :func:`primitives.loop.split`."""
        return loop.split(self, axis, factor, nparts)

    @recorded
    def tile(
        self, x: AxisRef, y: AxisRef, x_factor: int, y_factor: int
    ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Tile two axes; returns ``(x.outer, y.outer, x.inner, y.inner)``."""
        return loop.tile(self, x, y, x_factor, y_factor)

    @recorded
    def fuse(self, *axes: AxisRef) -> IterVar:
        """Fuse adjacent axes into one loop."""
        return loop.fuse(self, *axes)

    @recorded
    def reorder(self, *axes: AxisRef) -> None:
        """Permute the given loop axes among their positions."""
        loop.reorder(self, *axes)

    # Attach points --------------------------------------------------------------------------
    @recorded
    def compute_at(self, parent: Stage | Tensor | str, axis: AxisRef) -> None:
        """Compute this stage inside the loop of ``axis`` of ``parent``."""
        attach.compute_at(self, parent, axis)

    @recorded
    def compute_inline(self) -> None:
        """Substitute this stage's expression into its consumers."""
        attach.compute_inline(self)

    @recorded
    def compute_root(self) -> None:
        """Give this stage its own top-level loop nest (the default)."""
        attach.compute_root(self)

    @recorded
    def set_scope(self, scope: Scope | str) -> None:
        """Store this stage's output in ``scope``."""
        attach.set_scope(self, scope)

    # Loop annotations -----------------------------------------------------------------------
    @recorded
    def unroll(self, axis: AxisRef) -> None:
        """Unroll the loop of ``axis``."""
        annotate.unroll(self, axis)

    @recorded
    def vectorize(self, axis: AxisRef) -> None:
        """Turn the loop of ``axis`` into vector operations."""
        annotate.vectorize(self, axis)

    @recorded
    def parallel(self, axis: AxisRef) -> None:
        """Run iterations of ``axis`` on parallel threads."""
        annotate.parallel(self, axis)

    @recorded
    def bind(self, axis: AxisRef, thread: ThreadAxis | str) -> None:
        """Bind ``axis`` to a thread axis (``cthread``/``vthread`` or GPU block/thread)."""
        annotate.bind(self, axis, thread)

    @recorded
    def pragma(self, axis: AxisRef, key: PragmaKey | str, value: Any = 1) -> None:
        """Attach ``pragma key = value`` around the loop of ``axis``."""
        annotate.pragma(self, axis, key, value)

    @recorded
    def tensorize(self, axis: AxisRef, intrin: TensorIntrin | str) -> None:
        """Replace the loop nest from ``axis`` inward by the intrinsic ``intrin``."""
        annotate.tensorize(self, axis, intrin)
