"""CPU schedules of fused groups: the anchor's hand-tuned schedule with the injective ops after
it inlined into its output stage (TVM's fusion of elementwise epilogues), or
``schedule_injective`` for groups without an anchor.

A group's stages fall in three sets:

* the anchor and the stages its operator builds internally (padding, partial sums, the
  per-channel bias of an NCHW convolution): scheduled by the anchor's CPU schedule;
* epilogue stages that read the anchor: inlined into the group's output, which becomes the
  anchor's output stage (the anchor's accumulators are computed at its register tile);
* other stages (injective producers feeding the anchor): computed at the root, each with the
  injective schedule.

Example:
    >>> from compiler import te
    >>> from compiler.strategy.compute import compute_op
    >>> x = te.placeholder((1, 2, 8, 8, 1, 16), name="x")
    >>> w = te.placeholder((2, 2, 3, 3, 16, 16), name="w")
    >>> b = te.placeholder((1, 2, 1, 1, 1, 16), name="b")
    >>> conv = compute_op("conv2d", [x, w], dict(padding=(1, 1, 1, 1),
    ...     data_layout="NCHW1n16c", kernel_layout="OIHW16i16o"), "conv")
    >>> y = compute_op("relu", [compute_op("add", [conv, b], {}, "bias")], {}, "relu")
    >>> g = schedule_group([y], conv)
    >>> g.kind, {k: g.knobs[k] for k in ("ow_block", "oc_blocks", "reduce_order", "parallel")}
    ('conv2d_packed', {'ow_block': 8, 'oc_blocks': 2, 'reduce_order': 'ic_kh_kw', 'parallel': True})
    >>> [st.name for st in g.schedule.stages if st.attach.__class__.__name__ == "AttachInline"]
    ['bias']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import ComputeOp, IterKind, Operation, Tensor
from compiler.topi.cpu.conv2d import (
    apply_conv2d_nchwc,
    apply_depthwise_conv2d_nchwc,
    is_unpacked_output,
    register_tile_knobs,
)
from compiler.topi.cpu.conv2d_nchw import apply_conv2d_nchw
from compiler.topi.cpu.dense import apply_dense_split_k
from compiler.topi.cpu.injective import apply_injective
from compiler.topi.cpu.matmul import apply_matmul, default_matmul_rows
from compiler.topi.cpu.pooling import apply_pool

#: Tags of the stages an anchor operator builds for itself (walked back from the anchor).
_INTERNAL_TAGS = frozenset(
    {
        "pad",
        "conv2d_packed",
        "depthwise_conv2d_packed",
        "conv2d_nchw",
        "bias_add",
        "dense",
        "dense_partial",
        "matmul",
        "batch_matmul",
        "pool_sum",
        "pool_max",
        "pool_avg",
        "softmax",
        "reduce",
    }
)

KINDS = (
    "conv2d_packed",
    "depthwise_conv2d_packed",
    "conv2d_nchw",
    "dense",
    "matmul",
    "pool",
    "softmax",
    "reduction",
    "injective",
)


@dataclass(frozen=True)
class GroupSchedule:
    """A fused group's schedule, the anchor's kind and the knob values chosen (what an
    autotuner would search over; pass them back as ``knobs`` to rebuild the same schedule)."""

    schedule: Schedule
    kind: str
    knobs: Mapping[str, Any] = field(default_factory=dict)


def _compute_ops(outputs: Sequence[Tensor]) -> list[Operation]:
    return [st.op for st in create_schedule(list(outputs)).stages if isinstance(st.op, ComputeOp)]


def _readers(ops: Sequence[Operation]) -> dict[int, list[Operation]]:
    readers: dict[int, list[Operation]] = {id(op): [] for op in ops}
    for op in ops:
        for t in op.input_tensors():
            readers.setdefault(id(t.op), []).append(op)
    return readers


def _descendants(root: Operation, readers: Mapping[int, list[Operation]]) -> dict[int, Operation]:
    seen: dict[int, Operation] = {}
    stack = list(readers.get(id(root), []))
    while stack:
        op = stack.pop()
        if id(op) not in seen:
            seen[id(op)] = op
            stack.extend(readers.get(id(op), []))
    return seen


def _internal(anchor: Tensor) -> dict[int, Operation]:
    """The anchor and the stages its operator built (walking back through known tags)."""
    found: dict[int, Operation] = {id(anchor.op): anchor.op}
    stack = [anchor.op]
    while stack:
        op = stack.pop()
        for t in op.input_tensors():
            inner = t.op
            if not isinstance(inner, ComputeOp) or id(inner) in found:
                continue
            named = inner.name.startswith(f"{anchor.op.name}_")
            if inner.tag in _INTERNAL_TAGS or (anchor.op.tag == "softmax" and named):
                found[id(inner)] = inner
                stack.append(inner)
    return found


def _core(anchor: Tensor, internal: Mapping[int, Operation]) -> tuple[str, Operation]:
    if anchor.op.tag == "injective":
        # an opaque operator whose compute is injective (im2col): it reads each input value
        # several times, so what feeds it is materialised at the root, never inlined into it
        return "injective", anchor.op
    tags = {op.tag: op for op in internal.values()}
    for tag, kind in (
        ("conv2d_packed", "conv2d_packed"),
        ("depthwise_conv2d_packed", "depthwise_conv2d_packed"),
        ("conv2d_nchw", "conv2d_nchw"),
        ("dense", "dense"),
        ("matmul", "matmul"),
        ("batch_matmul", "reduction"),
        ("pool_max", "pool"),
        ("pool_sum", "pool"),
        ("softmax", "softmax"),
    ):
        if tag in tags:
            return kind, tags[tag]
    if isinstance(anchor.op, ComputeOp) and anchor.op.is_reduction:
        return "reduction", anchor.op
    for inner in internal.values():  # a mean: the sum, then an injective divide
        if isinstance(inner, ComputeOp) and inner.is_reduction:
            return "reduction", inner
    raise ScheduleError(
        f"schedule: anchor {anchor.name} (tag {anchor.op.tag!r}) is not a known anchor "
        "(conv2d, dense, matmul, pooling, softmax or a reduction)"
    )


def _inline_or_root(s: Schedule, op: Operation, is_output: bool) -> None:
    st = s[op]
    if is_output:
        return
    if isinstance(op, ComputeOp) and not op.is_reduction:
        st.compute_inline()


def _schedule_reduction_root(s: Schedule, op: Operation, parallel: bool) -> None:
    """A generic reduction at the root: outer spatial axes fused and parallel."""
    st = s[op]
    spatial = [iv for iv in st.leaf_iter_vars if iv.kind is not IterKind.REDUCE]
    if len(spatial) > 1 and parallel:
        st.parallel(st.fuse(*spatial[:-1]) if len(spatial) > 2 else spatial[0])


def schedule_group(
    outputs: Sequence[Tensor],
    anchor: Tensor | None,
    target: str = "cpu",
    knobs: Mapping[str, Any] | None = None,
) -> GroupSchedule:
    """Schedule a fused group for the CPU (see the module docstring); ``knobs`` overrides the
    heuristic's choices (``parallel`` plus the anchor's: ``ow_block``/``oc_blocks`` and
    :data:`CONV2D_PACKED_KNOBS` for a packed convolution, :data:`DEPTHWISE_PACKED_KNOBS` for a
    packed depthwise one, ``x_block``/``oc_block`` for an NCHW one, ``units_block`` and
    :data:`DENSE_KNOBS` for dense, ``rows``/``cols``/``lanes`` and :data:`MATMUL_KNOBS` for
    matmul, ``lanes`` for injective groups); a knob left out keeps the heuristic's value."""
    if target != "cpu":
        raise ScheduleError(f"schedule: the operator strategies target 'cpu', not {target!r}")
    if not outputs:
        raise ScheduleError("schedule: a group needs at least one output")
    knobs = dict(knobs or {})
    parallel = bool(knobs.pop("parallel", True))
    s = create_schedule(list(outputs))
    ops = _compute_ops(outputs)
    output_ids = {id(t.op) for t in outputs}
    readers = _readers(ops)

    if anchor is None:
        for op in ops:
            if isinstance(op, ComputeOp) and op.is_reduction:
                raise ScheduleError(
                    f"schedule: stage {op.name} is a reduction but the group has no anchor"
                )
            _inline_or_root(s, op, id(op) in output_ids)
        lanes = int(knobs.pop("lanes", 16))
        _no_extra(knobs, "injective")
        chosen: dict[str, Any] = {}
        for t in outputs:
            chosen = apply_injective(s, t, lanes, parallel)
        return GroupSchedule(s, "injective", chosen)

    if id(anchor.op) not in {id(op) for op in ops}:
        raise ScheduleError(f"schedule: anchor {anchor.name} is not computed by the group")
    internal = _internal(anchor)
    kind, core = _core(anchor, internal)
    after = _descendants(anchor.op, readers)
    # Epilogue: injective stages after the anchor go into the output stage.
    for op in after.values():
        if isinstance(op, ComputeOp) and op.is_reduction:
            raise ScheduleError(
                f"schedule: stage {op.name} after anchor {anchor.name} is a reduction; a group "
                "has one anchor"
            )
        _inline_or_root(s, op, id(op) in output_ids)
    # Producers outside the anchor: materialised at the root, except one read once by another
    # producer, which is inlined into it (a chain of elementwise stages is one vectorized pass:
    # materialising each link cost Magika's GELU before its max 3.3 ms instead of 0.26)
    before = {id(op) for op in ops if id(op) not in internal and id(op) not in after}
    for op in ops:
        if id(op) not in before:
            continue
        if isinstance(op, ComputeOp) and op.is_reduction:
            raise ScheduleError(
                f"schedule: stage {op.name} before anchor {anchor.name} is a reduction; a group "
                "has one anchor"
            )
        users = readers.get(id(op), [])
        if (
            isinstance(op, ComputeOp)
            and id(op) not in output_ids
            and len(users) == 1
            and id(users[0]) in before
        ):
            s[op].compute_inline()
            continue
        apply_injective(s, op.output(0), 16, parallel)

    final = _final(outputs, anchor, after)
    core_t = core.output(0)
    fused = final is not None and tuple(final.shape) == tuple(core_t.shape)
    # Stages of the anchor's own epilogue (an NCHW convolution's bias, dense's bias): inline.
    for op in internal.values():
        if op.tag in ("bias_add", "pool_avg") and id(op) not in output_ids:
            s[op].compute_inline()
    target_t = final if fused else None
    if kind == "conv2d_packed":
        if final is not None and not fused and is_unpacked_output(final, core_t, s):
            target_t = final
        tile = register_tile_knobs(core_t)
        chosen = apply_conv2d_nchwc(
            s,
            core_t,
            target_t,
            knobs.pop("ow_block", tile["ow_block"]),
            knobs.pop("oc_blocks", tile["oc_blocks"]),
            parallel,
            **_take(knobs, CONV2D_PACKED_KNOBS),
        )
    elif kind == "depthwise_conv2d_packed":
        chosen = apply_depthwise_conv2d_nchwc(
            s, core_t, target_t, parallel, **_take(knobs, DEPTHWISE_PACKED_KNOBS)
        )
    elif kind == "conv2d_nchw":
        chosen = apply_conv2d_nchw(
            s,
            core_t,
            target_t,
            knobs.pop("x_block", None),
            parallel,
            oc_block=knobs.pop("oc_block", None),
        )
    elif kind == "dense" and "split_k" in core.attrs:
        chosen = apply_dense_split_k(
            s,
            core_t,
            target_t,
            knobs.pop("units_block", None),
            parallel,
            **_take(knobs, DENSE_KNOBS),
        )
    elif kind == "matmul":
        rows = int(knobs.pop("rows", default_matmul_rows(core_t.shape[0])))
        cols = int(knobs.pop("cols", 32))
        lanes = int(knobs.pop("lanes", 16))
        chosen = apply_matmul(s, core_t, rows, cols, lanes, parallel, **_take(knobs, MATMUL_KNOBS))
        target_t = None
    elif kind == "pool":
        chosen = apply_pool(s, core_t, parallel)
        target_t = None
    else:
        for op in internal.values():
            if isinstance(op, ComputeOp) and op.is_reduction:
                _schedule_reduction_root(s, op, parallel)
        chosen = {}
        target_t = None
    _no_extra(knobs, kind)
    # Outputs that are not the anchor's register tile get the injective schedule.
    for t in outputs:
        if (target_t is not None and t.op is target_t.op) or id(t.op) in internal:
            if target_t is None and not (isinstance(t.op, ComputeOp) and t.op.is_reduction):
                apply_injective(s, t, 16, parallel)
            continue
        apply_injective(s, t, 16, parallel)
    return GroupSchedule(s, kind, {**chosen, "parallel": parallel})


def _final(
    outputs: Sequence[Tensor], anchor: Tensor, after: Mapping[int, Operation]
) -> Tensor | None:
    """The one group output that the anchor's register tile can produce: the anchor itself
    when it is the only output, or the only output reading it."""
    if len(outputs) == 1 and (outputs[0].op is anchor.op or id(outputs[0].op) in after):
        return outputs[0]
    return None


#: The keyword knobs each CPU schedule takes beyond its register tile (see the ``apply_*``
#: functions in ``compiler.topi.cpu``).
CONV2D_PACKED_KNOBS = (
    "oh_block",
    "ic_block",
    "ic_inner",
    "reduce_order",
    "tile_order",
    "unroll_kw",
    "unroll_ic",
    "lanes",
    "outer_order",
)
DEPTHWISE_PACKED_KNOBS = ("ow_block", "cb_block", "unroll_window", "pad_at")
DENSE_KNOBS = ("unit_groups", "k_block", "unroll_k", "lanes", "unroll_sum", "sum_order")
MATMUL_KNOBS = ("k_block", "k_order", "unroll_k", "pack_b", "outer_order")


def _take(knobs: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """Remove and return the knobs of ``names`` that ``knobs`` holds."""
    return {name: knobs.pop(name) for name in names if name in knobs}


def _no_extra(knobs: Mapping[str, Any], kind: str) -> None:
    if knobs:
        raise ScheduleError(f"schedule: knobs {sorted(knobs)} do not apply to a {kind} group")
