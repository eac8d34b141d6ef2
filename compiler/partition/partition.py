"""The partition rules: which node of a quantized graph runs where, and why.

The accelerator groups are cut by the grouping walk that ``fuse_ops`` and the host groups share
(:func:`~compiler.graph.passes.grouping.grow_groups`) under :class:`AcceleratorPolicy`: a node
that no group takes begins one when it is an anchor the rules below accept; the group's
``requantize`` and a fused ``qadd`` join it when the walk reaches them. A node in no group runs on
the host with the rule that refused it.

Rules, tried on each node in topological order (the first that decides wins):

* ``conv2d-group`` / ``depthwise-group`` / ``dense-group``: an int8 ``conv2d`` (NCHW, one group
  or depthwise (``groups == C == O``: GEMM on diagonal weight tiles, when
  ``block_in == block_out``), no dilation, any ``KH x KW`` kernel and strides ``(rows,
  columns)``, padding per side within the LOAD pad field, a kernel window that fits the
  weight buffer) or ``dense`` with constant int8 weights and an optional constant int32 bias,
  whose only reader is a per-channel ``requantize`` (``axis=1``), runs on the accelerator with
  that ``requantize`` (``requantize-fused``). Channels and batch are padded up to the config's
  blocks (the first layer's 1 or 3 channels included).
* ``matmul-group``: an int8 ``matmul`` of two activations (the same batch dims on both, no
  broadcast), run per batch matrix as a dense whose weight tensor the host writes at run time
  (:mod:`compiler.topi.vta.qmatmul`), with the ``requantize`` that alone reads it (one scale
  for the whole tensor, repeated per channel).
* ``qadd-fused``: a ``qadd`` that is the only reader of such a group's ``requantize`` (and
  whose other operand is an int8 tensor of the same shape) joins the group.
* ``qhard_swish-fused``: a ``qhard_swish`` that is the only reader of a ``conv2d`` or
  ``dense`` group's ``requantize`` joins the group (its gate on a copy of the requantized tile)
  where the copy costs no more cycles than the two loads a group of its own makes
  (:func:`copy_pays`).
* ``pool-group``: an int8 ``max_pool2d`` (square window, equal strides, no dilation; ceil mode
  runs as the padding its last windows reach, one output row's window within the accumulator
  buffer) or ``global_sum_pool2d`` with
  the ``requantize`` that reads it: the window is loaded into the accumulator and combined by
  one MAX tensor-tensor instruction per tap, or summed by ADD instructions whose loops walk
  the window (a program of one size for any window).
* ``relu-group`` / ``clip-group`` / ``qadd-group``: an int8 ``relu`` (``MAX 0``), an int8
  ``clip`` with whole-number bounds (``MAX lo``, ``MIN hi``) or a ``qadd`` that no group took
  (both operands loaded into the accumulator, then the quantizer's ALU sequence), over an NCHW
  or ``(N, C)`` tensor: a group of its own (:mod:`compiler.topi.vta.qelementwise`);
  ``qhard_sigmoid-group`` / ``qhard_swish-group`` the same for the exact integer hard sigmoid
  and hard swish (:mod:`compiler.quantize.hard`; the hard swish reads its input twice), and
  ``qmul-group`` for an int8 multiply (a squeeze-excitation's channel-wise gate included).
* ``resize-group``: an int8 nearest ``resize`` of an NCHW tensor that repeats each row and
  column a whole number of times (any coordinate mode whose index map is that: upsampling by
  2 as exporters write it): the input rows loaded into the accumulator, each entry copied to
  its outputs by the ALU.
* ``rescale-group``: the ``cast`` of an int8 tensor to int32 whose only reader is a
  ``requantize`` (an int8 value rescaled in the integer domain: a concat's operand at another
  scale), with that ``requantize`` (``requantize-fused``): the tensor loaded into the
  accumulator, the requantize's steps as ALU immediates.
* ``fp32-sensitive``: a node the quantization kept in fp32 because its own int8 error was over
  the sensitivity threshold (:mod:`compiler.quantize.sensitivity`): host work, the reason
  gives the measured error and the threshold.
* Everything else is host work, each with its own rule: ``float-edge`` (``quantize``,
  ``dequantize``), ``float-op`` (no integer form, or a float operand: a ``relu`` or ``clip``
  left in float), ``layout`` (``reshape``, ``transpose``; and ``concat`` and
  ``strided_slice``, which move int8 elements), ``resize-shape`` (a nearest resize whose index
  map is not a whole repeat of each row and column), ``relu-shape`` / ``clip-shape`` /
  ``qadd-shape`` (a tensor the elementwise groups do not take: not NCHW or 2-d, or rows longer
  than a DMA stride), ``clip-bounds`` (a bound that is not a whole number), ``pool-shape`` /
  ``pool-window`` (a pooling beyond the limits above), ``requantize-host`` (a requantize of a
  host value, and a ``cast`` to int32 that no rescale group takes), and the rules that
  name the limit a ``conv2d`` / ``dense`` exceeds (``conv2d-groups``, ``conv2d-dilation``,
  ``conv2d-shape``, ``conv2d-padding``, ``conv2d-window``, ``gemm-dtype``, ``gemm-weights``,
  ``gemm-requantize``).
* ``in-place``: a ``concat`` or channel ``strided_slice`` that the DRAM plan does with no copy
  (decided after the partition, by the plan): the groups producing its operands store side by
  side into the one tensor its accelerator readers load, or its readers load their channels
  straight from the producer's output.
* ``compile-failed``: a group that these rules accept but whose accelerator compile fails all
  the same (a tiling the limits above do not foresee, such as a kernel window that fits the
  weight buffer but not the input buffer): the caller names its anchor in ``exclude`` with the
  compile's error, and the anchor and every node the group would have fused (its
  ``requantize``, a fused ``qadd``) run on the host with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from compiler.graph import Graph, Node, Value
from compiler.graph.passes.grouping import Grown, Walk, grow_groups
from compiler.quantize.sensitivity import fp32_fallbacks
from compiler.registry import Unsupported, VtaImpl, support
from isa import HwConfig

VTA = "vta"
CPU = "cpu"
#: The rule of a group's nodes sent to the host because its accelerator compile failed (it is
#: not a limit of the graph but what the compiler said)
COMPILE_FAILED = "compile-failed"
#: The rule of a node kept fp32 by the quantization's sensitivity check.
FP32_SENSITIVE = "fp32-sensitive"
#: The rule of a concat or slice that the DRAM plan does in place (set by the plan, after the
#: partition: :func:`compiler.targets.vta.link.plan_network_dram`): its operands' producers
#: store into the tensor its readers load, and nothing runs for it.
IN_PLACE = "in-place"
IN_PLACE_REASON = {
    "concat": "its operands' groups store side by side into the tensor its readers load (no copy)",
    "strided_slice": "its readers load their channels from the producer's output (no copy)",
}
#: Rules whose reason (what the compiler said, a measurement) the runtime's report repeats.
EXPLAINED_RULES = frozenset({COMPILE_FAILED, FP32_SENSITIVE})


@dataclass(frozen=True)
class Placement:
    """Where one node runs: ``device`` (``vta`` or ``cpu``), the accelerator ``group`` it
    belongs to (its anchor's name), the ``rule`` that decided and the ``reason`` in words."""

    node: str
    op: str
    device: str
    group: str | None
    rule: str
    reason: str


@dataclass(frozen=True)
class AccelGroup:
    """Nodes that become one accelerator program: ``anchor`` (conv2d or dense), its
    ``requantize`` and an optional fused ``qadd`` whose other operand is ``residual`` or an
    optional fused ``qhard_swish`` (``post``); or a pooling (with its ``requantize``); or one
    elementwise node (``relu``, ``clip``, a ``qadd`` of its own whose second operand is
    ``residual``)."""

    name: str
    kind: str
    anchor: Node
    requantize: Node | None
    qadd: Node | None = None
    residual: Value | None = None
    post: Node | None = None
    #: the ``pack`` of the group's output that stands for its stores, when the host reads the
    #: output (made by the accelerator build's ``pack`` pass, :mod:`compiler.targets.vta.pack`)
    store: Node | None = None

    @property
    def output(self) -> Node:
        for last in (self.post, self.qadd, self.requantize):
            if last is not None:
                return last
        return self.anchor

    @property
    def compute_nodes(self) -> tuple[Node, ...]:
        """The nodes the group computes: its anchor and what it fused (without the ``unpack``
        and ``store`` nodes that stand for its loads and stores)."""
        return tuple(n for n in (self.anchor, self.requantize, self.qadd, self.post)
                     if n is not None)  # fmt: skip

    @property
    def nodes(self) -> tuple[Node, ...]:
        """The group's nodes in graph order: the ``unpack`` nodes through which it reads the
        inputs the host packed (made by the accelerator build's ``pack`` pass,
        :mod:`compiler.targets.vta.pack`), its anchor and what it fused, and the ``store``
        the host reads back."""
        core = self.compute_nodes
        reads: dict[int, Node] = {}
        for n in core:
            for v in n.inputs:
                if isinstance(v, Node) and v.op == "unpack":
                    reads.setdefault(id(v), v)
        return (*reads.values(), *core, *((self.store,) if self.store is not None else ()))


@dataclass(frozen=True)
class Partition:
    """The placement of every node of ``graph`` for ``config`` and the accelerator groups."""

    graph: Graph
    config: str
    placements: tuple[Placement, ...]
    groups: tuple[AccelGroup, ...]

    def placement(self, node: str) -> Placement:
        for p in self.placements:
            if p.node == node:
                return p
        raise KeyError(f"graph {self.graph.name} has no node {node!r}")

    def host_nodes(self) -> list[Placement]:
        return [p for p in self.placements if p.device == CPU]

    def table(self) -> str:
        """One line per node: name, op, device, group, rule and reason.

        Example:
            >>> import isa
            >>> from compiler.graph import Graph, Node, TensorType, Var
            >>> x = Var("x", TensorType((2, 3), "float32"))
            >>> g = Graph.from_outputs([x], [Node("softmax", (x,), {"axis": 1}, name="p")])
            >>> print(partition_graph(g, isa.load_config("default")).table().splitlines()[2])
            p     softmax  cpu     -      float-op  float32 operator: no integer form
        """
        from isa.report import Column, format_table

        columns = [Column(t) for t in ("node", "op", "device", "group", "rule", "reason")]
        rows = [(p.node, p.op, p.device, p.group or "-", p.rule, p.reason) for p in self.placements]
        return format_table(columns, rows)


def _only_reader(graph: Graph, node: Node, users: dict[int, list[Node]]) -> Node | None:
    readers = users.get(id(node), [])
    if len(readers) != 1 or any(o is node for o in graph.outputs):
        return None
    return readers[0]


#: The reason of a ``requantize`` fused after each kind of anchor.
_RQ_REASON = {
    "pool": "one scale for every channel: ALU immediates",
    "rescale": "one scale for every channel: ALU immediates",
    "gemm": "per-channel requantization on the ALU (bias, multiplier, shift tiles)",
}
_QADD_REASON = (
    "the other operand is loaded into the accumulator (ACC8), then MUL, ADD, rounding shift "
    "and clip on the ALU"
)
_HARD_SWISH_REASON = (
    "on the requantized tile: a copy of it for the gate (MUL, ADD, SHR, ADD, MAX, MIN), MUL of "
    "the two, then MUL, rounding shift and clip on the ALU"
)


def copy_pays(cfg: HwConfig) -> bool:
    """Whether fusing a hard swish into the conv2d or dense group it follows saves cycles on
    ``cfg``: fused, the compute module copies the tile for the gate (``MUL 0`` at
    ``alu_imm_ii``, ``ADD`` at ``alu_ii`` per entry); a group of its own, the compute module
    loads the int8 tile twice (ACC8, ``out_elem_bytes`` per entry each, ``bus_bytes`` a cycle).
    On ``default`` (4-byte entries) the copy costs more than the loads it saves.

    Example:
        >>> import isa
        >>> copy_pays(isa.load_config("vta-1x16x16")), copy_pays(isa.load_config("default"))
        (True, False)
    """
    loads = 2 * cfg.out_elem_bytes / cfg.bus_bytes
    return loads >= cfg.alu_imm_ii + cfg.alu_ii


class AcceleratorPolicy:
    """The accelerator's groups as a :class:`~compiler.graph.passes.grouping.GroupPolicy`: a
    group begins at an anchor the registry's ``fits`` accepts (a ``conv2d`` / ``dense`` only
    with the per-channel ``requantize`` that alone reads it, a ``global_sum_pool2d`` only with
    the ``requantize`` that alone reads it); that ``requantize`` joins it, then (after a
    ``conv2d`` / ``dense``) a ``qadd`` that alone reads the ``requantize`` and whose other
    operand is computed before the group runs. A node that begins no group keeps the rule and
    reason why in ``host``."""

    def __init__(self, graph: Graph, cfg: HwConfig) -> None:
        self.graph = graph
        self.cfg = cfg
        self.users = graph.users
        self.sensitive = fp32_fallbacks(graph)
        #: the VtaImpl of each anchor, by id
        self.impls: dict[int, VtaImpl] = {}
        #: the requantize each anchor needs, by the anchor's id
        self.requantize: dict[int, Node] = {}
        #: (rule, reason) of each node that begins no group, by id
        self.host: dict[int, tuple[str, str]] = {}

    def _requantize_of(self, node: Node, per_channel: bool) -> Node | None:
        """The ``requantize`` that alone reads ``node`` (per channel: ``axis=1``), or None."""
        rq = _only_reader(self.graph, node, self.users)
        if rq is None or rq.op != "requantize" or rq.inputs[0] is not node:
            return None
        if per_channel and rq.attrs["axis"] != 1:
            return None
        return rq

    def starts(self, node: Node) -> bool:
        if id(node) in self.sensitive:
            self.host[id(node)] = (FP32_SENSITIVE, self.sensitive[id(node)].reason)
            return False
        impl = support("vta", node.op)
        if not isinstance(impl, VtaImpl):
            self.host[id(node)] = _host_rule(node, impl)
            return False
        limit = impl.fits(node, self.cfg)
        rq = None
        if limit is None and impl.kind == "pool" and node.op == "global_sum_pool2d":
            rq = self._requantize_of(node, per_channel=False)
            if rq is None:
                limit = ("gemm-requantize", "its int32 sum must be read by one requantize only")
        elif limit is None and impl.kind == "rescale":
            rq = self._requantize_of(node, per_channel=False)
            if rq is None:
                limit = ("requantize-host", "its int32 value must be read by one requantize only")
        elif limit is None and impl.kind == "gemm":
            rq = self._requantize_of(node, per_channel=True)
            if rq is None:
                limit = (
                    "gemm-requantize",
                    "its int32 result must be read by one per-channel requantize only (the "
                    "accelerator stores int8)",
                )
        if limit is not None:
            self.host[id(node)] = limit
            return False
        self.impls[id(node)] = impl
        if rq is not None:
            self.requantize[id(node)] = rq
        return True

    def is_anchor(self, node: Node) -> bool:
        return True  # the group's first node

    def may_fuse(self, group: Grown, node: Node, walk: Walk) -> bool:
        anchor = group.nodes[0]
        if len(group.nodes) == 1:
            return self.requantize.get(id(anchor)) is node
        if len(group.nodes) != 2 or self.impls[id(anchor)].kind != "gemm":
            return False
        rq = group.tail
        if _only_reader(self.graph, rq, self.users) is not node:
            return False
        if node.op == "qhard_swish":  # on the requantized tile, of a conv2d or dense
            return anchor.op in ("conv2d", "dense") and node.type == rq.type and copy_pays(self.cfg)
        if node.op != "qadd":
            return False
        other = self.residual(node, rq)
        return other is not rq and other.type == rq.type and self._runs_before(other, group, walk)

    @staticmethod
    def residual(add: Node, rq: Node) -> Value:
        """The operand of ``add`` that is not ``rq``."""
        return add.inputs[1] if add.inputs[0] is rq else add.inputs[0]

    @staticmethod
    def _runs_before(value: Value, group: Grown, walk: Walk) -> bool:
        """Whether ``value`` exists when ``group`` runs: a graph input, a constant, or a node
        computed at an earlier step (host nodes and groups run in topological order, a group
        at its anchor)."""
        if not isinstance(value, Node):
            return True
        holder = walk.group_of(value)
        step = holder.first if holder is not None else walk.position_of(value)
        return step < group.first

    def rank(self, group: Grown) -> int:
        return 0


def partition_graph(
    graph: Graph, cfg: HwConfig, exclude: Mapping[str, str] | None = None
) -> Partition:
    """Place every node of the quantized ``graph`` for ``cfg`` (see the module docstring).

    The accelerator groups are those :func:`~compiler.graph.passes.grouping.grow_groups` cuts
    under :class:`AcceleratorPolicy`; every node in none runs on the host with its rule.

    ``exclude`` maps the names of group anchors (an :class:`AccelGroup`'s ``name``) to why
    their group must not run on the accelerator (its compile failed): the group's nodes go to
    the host with the rule ``compile-failed`` and that reason. A name that is no group's
    anchor is refused (ValueError), so a stale name cannot pass unnoticed.

    Example:
        >>> import isa
        >>> from compiler.graph import Graph, Node, TensorType, Var
        >>> x = Var("x", TensorType((2, 3), "int8"))
        >>> part = partition_graph(Graph.from_outputs([x], [Node("relu", (x,), name="r")]),
        ...                        isa.load_config("default"))
        >>> part.placement("r").rule, [g.kind for g in part.groups]
        ('relu-group', ['relu'])
    """
    policy = AcceleratorPolicy(graph, cfg)
    placed: dict[int, Placement] = {}
    groups: list[AccelGroup] = []
    exclude = dict(exclude or {})
    excluded: set[str] = set()

    def put(node: Node, device: str, group: str | None, rule: str, reason: str) -> None:
        placed[id(node)] = Placement(node.name or node.op, node.op, device, group, rule, reason)

    for grown in grow_groups(graph.nodes, policy):
        node = grown.nodes[0]
        impl = policy.impls[id(node)]
        rq = grown.nodes[1] if len(grown.nodes) > 1 else None
        third = grown.nodes[2] if len(grown.nodes) > 2 else None
        post = third if third is not None and third.op == "qhard_swish" else None
        qadd = third if post is None else None
        if qadd is not None:
            assert rq is not None
            residual: Value | None = policy.residual(qadd, rq)
        elif impl.kind == "elementwise" and impl.second is not None:
            residual = node.inputs[impl.second]
        else:
            residual = None
        name = node.name or node.op
        group = AccelGroup(name, node.op, node, rq, qadd, residual, post)
        reason = exclude.get(name)
        if reason is not None:
            # the nodes it would have fused go with it: a requantize or qadd of its own would
            # be a host value's all the same
            excluded.add(name)
            for n in group.nodes:
                put(n, CPU, None, COMPILE_FAILED, reason)
            continue
        groups.append(group)
        put(node, VTA, name, *impl.placement(node, cfg))
        if rq is not None:
            put(rq, VTA, name, "requantize-fused", _RQ_REASON[impl.kind])
        if qadd is not None:
            put(qadd, VTA, name, "qadd-fused", _QADD_REASON)
        if post is not None:
            put(post, VTA, name, "qhard_swish-fused", _HARD_SWISH_REASON)
    for node in graph.nodes:
        if id(node) not in placed:
            put(node, CPU, None, *policy.host[id(node)])
    unknown = sorted(set(exclude) - excluded)
    if unknown:
        raise ValueError(
            f"graph {graph.name}: exclude names {', '.join(map(repr, unknown))}, not the anchor "
            "of an accelerator group"
        )
    placements = tuple(placed[id(n)] for n in graph.nodes)
    return Partition(graph, cfg.name, placements, tuple(groups))


def _host_rule(node: Node, impl: Unsupported | None) -> tuple[str, str]:
    """The rule and reason of a node whose operator the accelerator does not implement
    (``impl``: the registry's reason, None when none is registered)."""
    op = node.op
    if op in ("quantize", "dequantize"):
        return "float-edge", f"{op} converts between float32 and int8 at the integer region's edge"
    if node.type.dtype.startswith("float") or any(
        v.type.dtype.startswith("float") for v in node.inputs
    ):
        if impl is not None and not impl.reason.startswith("float32 operator"):
            return "float-op", f"float32 operator: {impl.reason}"  # the operator's own reason
        return "float-op", "float32 operator: no integer form"
    if op in ("reshape", "transpose", "layout_transform", "im2col", "pack", "unpack"):
        return "layout", f"{op} is a layout change done on the host"
    if op in ("concat", "strided_slice", "pad"):
        return "layout", f"{op} moves int8 elements on the host"
    if op == "requantize" or (op == "cast" and node.type.dtype == "int32"):
        return "requantize-host", "requantizes a value computed on the host"
    why = impl.reason if impl is not None else "no accelerator implementation is registered"
    return "no-rule", f"the accelerator has no lowering for {op}: {why}"


__all__ = [
    "AccelGroup",
    "AcceleratorPolicy",
    "COMPILE_FAILED",
    "CPU",
    "EXPLAINED_RULES",
    "FP32_SENSITIVE",
    "IN_PLACE",
    "IN_PLACE_REASON",
    "Partition",
    "Placement",
    "VTA",
    "partition_graph",
]
