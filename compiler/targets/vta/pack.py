"""The host's packing of an accelerator group's inputs, made graph nodes: the ``pack`` pass of
the accelerator build (:func:`compiler.model.vta.vta_pipeline`, after the DRAM plan).

The accelerator's programs read int8 (or int32) tensors in its block layout. A group input that
another accelerator group stored in that layout is read in place (the DRAM plan,
:mod:`compiler.targets.vta.link`); any other the host packs, and the graph says so. For each
such input the pass inserts two nodes:

* a ``pack`` on the host (:func:`compiler.graph.ops.block_pack_shape`): the value in the block
  layout, padded to whole blocks: NCHW (or ``(N, C)`` rows) with ``block_in`` channels per
  block for what a GEMM reads, ``block_out`` for what an ALU group or a pool reads (the layout
  a producing group stores) and for a fused residual; a matmul of two activations reads its
  left operand as the rows of each matrix (``batch_rows``) and its right operand ``(..., K,
  N)`` transposed into the weight layout (``batch_weight``: the weight tensor of its program
  is an activation the host writes at every run, not a constant). The host groups compile and
  run it like any host node: a group's packs are placed together just before it, so they run
  in the host kernel that precedes the group (with the node that makes the value, when that
  node comes right before). One ``pack`` serves every group that reads the value in the same
  layout;
* an ``unpack`` in the group, the node that reads the packed value: it stands for the group's
  loads, which read the block layout, so that the graph keeps its meaning (the reference
  executor gives the same integers) and the group's input is the ``pack``'s result, which the
  runtime writes into the program's tensor (:func:`group_writes`).

The way back is the same: a group output that the host reads (a host node's operand, an
operand the host packs for another group, a graph output) gets a ``pack`` in the group, its
``store``, which stands for the group's stores into its ``out`` tensor (:func:`stored_packing`),
and an ``unpack`` on the host (rule ``read-back``), which a host group compiles. The runtime
then only copies bytes: a packed slot into a program's input tensor, a program's ``out`` tensor
into the slot of its ``store``.

Whatever else the host computes before a group is a graph node too: a max pool's -128 padding
(a ``pad``) and the first layer's channel fold (an ``im2col``), made by the ``host_steps`` pass
(:mod:`compiler.targets.vta.host_steps`). ``vtac graph MODEL --target vta`` prints them all.

Example:
    >>> from isa import load_config
    >>> from compiler.graph import Graph, Node, TensorType, Var
    >>> from compiler.partition import partition_graph
    >>> x = Var("x", TensorType((1, 16, 4, 4), "int8", "NCHW"))
    >>> cfg = load_config("vta-1x16x16")
    >>> g = Graph.from_outputs([x], [Node("relu", (x,), name="r")])
    >>> graph, part = insert_packs(g, partition_graph(g, cfg), {}, cfg)
    >>> for n in graph.nodes:
    ...     print(n.op, n.name, part.placement(n.name).device)
    pack r.data.pack cpu
    unpack r.data vta
    relu r vta
    pack r.out vta
    unpack r.read cpu
    >>> [(symbol, v.op, v.type.shape) for symbol, v in group_writes(part.groups[0])]
    [('data', 'pack', (1, 1, 4, 4, 1, 16))]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from compiler.errors import ModelError
from compiler.graph import Constant, Graph, Node, Value
from compiler.graph.ir import post_order
from compiler.partition.partition import CPU, VTA, AccelGroup, Partition, Placement
from compiler.registry import lookup
from isa import HwConfig

#: The rules of a ``pack`` node on the host and of the ``unpack`` node in the group that reads
#: it; of a group's ``pack`` of its output (its store) and the host's ``unpack`` of it.
PACK_RULE = "pack"
PACKED_INPUT_RULE = "packed-input"
PACKED_OUTPUT_RULE = "packed-output"
READ_BACK_RULE = "read-back"


def _name(v: Value) -> str:
    return v.label if isinstance(v, Node) else v.name


def group_inputs(group: AccelGroup) -> list[tuple[str, Value]]:
    """``(symbol, value)`` of the inputs of ``group`` that come from outside it: its
    ``data``, a matmul's right operand (its program's ``weight``, an activation) and, for a
    group with a fused residual, its ``residual``. After the ``pack`` pass a packed input's
    value is the group's ``unpack`` node."""
    inputs = [("data", group.anchor.inputs[0])]
    if group.kind == "matmul":
        inputs.append(("weight", group.anchor.inputs[1]))
    if group.residual is not None:
        inputs.append(("residual", group.residual))
    return inputs


def group_writes(group: AccelGroup) -> list[tuple[str, Node]]:
    """``(symbol, pack node)`` of the inputs of ``group`` the host writes: each read through
    an ``unpack`` (the others are read in place from the group that stored them)."""
    writes = []
    for symbol, v in group_inputs(group):
        if isinstance(v, Node) and v.op == "unpack" and isinstance(v.inputs[0], Node):
            writes.append((symbol, v.inputs[0]))
    return writes


def block_packing(
    group: AccelGroup, symbol: str, ndim: int, cfg: HwConfig
) -> tuple[str, tuple[int, int]]:
    """The block layout and blocks ``(b, c)`` in which ``group`` reads input ``symbol``
    (``data``, ``weight`` or ``residual``) of ``ndim`` axes."""
    if group.kind == "matmul":
        if symbol == "weight":
            return "batch_weight", (cfg.block_out, cfg.block_in)
        return "batch_rows", (cfg.batch, cfg.block_in if symbol == "data" else cfg.block_out)
    out = (
        symbol == "residual"
        or group.kind in ("global_sum_pool2d", "max_pool2d")
        or lookup("vta", group.kind).kind in ("elementwise", "rescale")
    )
    return ("nchw" if ndim == 4 else "rows"), (cfg.batch, cfg.block_out if out else cfg.block_in)


def _readers(group: AccelGroup, aliased: tuple[str, ...]) -> list[tuple[Node, int, str]]:
    """``(node, input position, symbol)`` of each read of a packed input inside ``group``."""
    found = []
    if "data" not in aliased:
        found.append((group.anchor, 0, "data"))
    if group.kind == "matmul" and "weight" not in aliased:
        found.append((group.anchor, 1, "weight"))
    if group.residual is not None and "residual" not in aliased:
        for node in group.nodes:
            for k, v in enumerate(node.inputs):
                mine = node is group.anchor and (k == 0 or (group.kind == "matmul" and k == 1))
                if v is group.residual and not mine:
                    found.append((node, k, "residual"))
    return found


def _second_read(group: AccelGroup, aliased: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether ``group`` reads its data again as its packed residual (an elementwise group
    whose second operand is its first input: no input position of its own)."""
    return (
        group.residual is not None
        and "residual" not in aliased.get(group.name, ())
        and not any(symbol == "residual" for _, _, symbol in _readers(group, ()))
    )


def stored_packing(group: AccelGroup, cfg: HwConfig) -> tuple[str, tuple[int, int]]:
    """The block layout and blocks in which ``group`` stores its output (its program's
    ``out``): NCHW, rows or the rows of each matrix, ``block_out`` channels per block."""
    ndim = len(group.output.type.shape)
    layout = "batch_rows" if group.kind == "matmul" else "nchw" if ndim == 4 else "rows"
    return layout, (cfg.batch, cfg.block_out)


def insert_packs(
    graph: Graph, partition: Partition, aliased: Mapping[str, tuple[str, ...]], cfg: HwConfig
) -> tuple[Graph, Partition]:
    """``graph`` with the packing at the edges of the accelerator groups as nodes, and
    ``partition`` over the new graph (the module docstring): for every group input that the
    DRAM plan does not read in place (``aliased``: per group, the symbols read in place), a
    ``pack`` on the host and an ``unpack`` in the group; for every group output the host
    reads (a host node's operand, a graph output), a ``pack`` in the group (its store, the
    group's ``store``) and an ``unpack`` on the host."""
    if partition.graph is not graph:
        raise ModelError(f"graph {graph.name}: the partition is of another graph")
    taken = {n.name for n in graph.nodes} | {v.name for v in graph.inputs}

    def fresh(name: str) -> str:
        k, out = 1, name
        while out in taken:
            k, out = k + 1, f"{name}{k}"
        taken.add(out)
        return out

    reads: dict[int, list[tuple[int, AccelGroup, str]]] = {}
    for g in partition.groups:
        for node, k, symbol in _readers(g, tuple(aliased.get(g.name, ()))):
            reads.setdefault(id(node), []).append((k, g, symbol))
    if len(partition.placements) != len(graph.nodes) or any(
        p.node != n.label for p, n in zip(partition.placements, graph.nodes, strict=False)
    ):
        raise ModelError(f"graph {graph.name}: the partition does not place its nodes in order")
    # by node, not by name: a graph may hold two nodes of one name (an LSTM's unrolled steps)
    place_of = {id(n): p for n, p in zip(graph.nodes, partition.placements, strict=True)}
    on_host = {id(n) for n in graph.nodes if place_of[id(n)].device == CPU}
    anchor_of = {id(g.anchor): g for g in partition.groups}
    output_of = {id(g.output): g for g in partition.groups}
    # the group outputs the host reads: a host node's operand, a graph output, or an input
    # another group reads packed (the host reads it back to pack it)
    read = {id(v) for n in graph.nodes if id(n) in on_host for v in n.inputs}
    read |= {id(v) for v in graph.outputs}
    read |= {id(n.inputs[k]) for g in partition.groups
             for n, k, _ in _readers(g, tuple(aliased.get(g.name, ())))}  # fmt: skip
    packs: dict[tuple[int, str, tuple[int, int]], Node] = {}
    pack_users: dict[str, list[str]] = {}
    unpacks: dict[tuple[str, str], Node] = {}  # (group, symbol) -> unpack node
    stores: dict[str, Node] = {}  # group -> the pack of its output (its store)
    read_backs: dict[str, Node] = {}  # group -> the host's unpack of its stored output
    stored: dict[int, AccelGroup] = {}  # id(a group's output in the new graph) -> group
    new_of: dict[int, Value] = {}
    order: list[Node] = []
    placed: set[int] = set()

    def emit(v: Value) -> None:
        """Append ``v`` and the new nodes it reads that are not placed yet, inputs first."""
        post_order(v, placed, order)

    def read_back(value: Value) -> Value:
        """``value``, or the host's unpack of it when it is a group's output."""
        g = stored.get(id(value))
        if g is None:
            return value
        if g.name not in read_backs:
            layout = stores[g.name].attrs["layout"]
            shape = tuple(int(d) for d in value.type.shape)
            read_backs[g.name] = Node("unpack", (stores[g.name],),
                                      {"layout": layout, "shape": shape},
                                      fresh(f"{g.name}.read"))  # fmt: skip
        return read_backs[g.name]

    def packed(value: Value, g: AccelGroup, symbol: str) -> Node:
        if (g.name, symbol) in unpacks:
            return unpacks[(g.name, symbol)]
        value = read_back(value)  # another group's output the plan does not hand over
        shape = tuple(int(d) for d in value.type.shape)
        layout, blocks = block_packing(g, symbol, len(shape), cfg)
        key = (id(value), layout, blocks)
        if key not in packs:
            attrs = {"layout": layout, "blocks": blocks}
            packs[key] = Node("pack", (value,), attrs, fresh(f"{g.name}.{symbol}.pack"))
        pack = packs[key]
        pack_users.setdefault(pack.name, []).append(f"{g.name}.{symbol}")
        unpack = Node("unpack", (pack,), {"layout": layout, "shape": shape},
                      fresh(f"{g.name}.{symbol}"))  # fmt: skip
        unpacks[(g.name, symbol)] = unpack
        return unpack

    for node in graph.nodes:
        anchored = anchor_of.get(id(node))
        if anchored is not None:
            # the group runs at its anchor: every input it reads packed is packed before it
            # (a residual a later node of the group reads included), so the host runs the
            # packs in the host group just before the group
            made = []
            for reader, k, symbol in _readers(anchored, tuple(aliased.get(anchored.name, ()))):
                value = reader.inputs[k]
                if isinstance(value, Node) and id(value) not in new_of:
                    continue  # made later in the graph's order: packed where it is read
                made.append(packed(new_of.get(id(value), value), anchored, symbol))
            # the packs first, then the group's unpacks: one run of host nodes, not cut by them
            for unpack in made:
                emit(unpack.inputs[0])
            for unpack in made:
                emit(unpack)
        ins = [new_of.get(id(v), v) for v in node.inputs]
        if id(node) in on_host:
            ins = [read_back(v) for v in ins]
        for k, reader_group, symbol in reads.get(id(node), ()):
            ins[k] = packed(ins[k], reader_group, symbol)
            emit(ins[k])
        same = all(a is b for a, b in zip(ins, node.inputs, strict=True))
        out = node if same else Node(node.op, tuple(ins), node.attrs, node.name)
        new_of[id(node)] = out
        emit(out)
        producer = output_of.get(id(node))
        if producer is not None and id(node) in read:
            # the group's store, just after its output: it does not cut the host's runs
            layout, blocks = stored_packing(producer, cfg)
            stores[producer.name] = Node("pack", (out,), {"layout": layout, "blocks": blocks},
                                         fresh(f"{producer.name}.out"))  # fmt: skip
            stored[id(out)] = producer
            emit(stores[producer.name])
    outputs = tuple(read_back(new_of.get(id(v), v)) for v in graph.outputs)
    for v in outputs:
        emit(v)
    if not unpacks and not stores:
        return graph, partition
    new_graph = Graph(graph.inputs, tuple(order), outputs, graph.name)
    for g in partition.groups:
        if _second_read(g, aliased) and (g.name, "residual") not in unpacks:
            # an input loaded twice (a LeakyReLU's, a hard swish's): its residual is its data,
            # read through the same unpack, so the host writes the one pack into both
            data = unpacks.get((g.name, "data"))
            assert g.residual is not None
            want = block_packing(g, "residual", len(g.residual.type.shape), cfg)
            pack = data.inputs[0] if data is not None else None
            same = isinstance(pack, Node) and (pack.attrs["layout"], pack.attrs["blocks"]) == want
            if data is None or not isinstance(pack, Node) or not same:
                how = "read in place" if data is None else f"packed {data.attrs['layout']}"
                raise ModelError(
                    f"group {g.name}: its input is both its data ({how}) and its residual "
                    f"(packed {want[0]} in {want[1]} blocks): one pack cannot write both"
                )
            unpacks[(g.name, "residual")] = data
            pack_users[pack.name].append(f"{g.name}.residual")

    def remap(v: Any) -> Any:
        return v if v is None or isinstance(v, Constant) else new_of.get(id(v), v)

    groups = []
    for g in partition.groups:
        residual = unpacks.get((g.name, "residual"), remap(g.residual))
        nodes = {k: remap(getattr(g, k)) for k in ("anchor", "requantize", "qadd", "post")}
        groups.append(replace(g, residual=residual, store=stores.get(g.name), **nodes))
    old = {id(new_of[id(n)]): place_of[id(n)] for n in graph.nodes}
    pack_ids = {id(n) for n in packs.values()}
    group_of = {id(u): name for (name, _), u in unpacks.items()}
    store_of = {id(n): name for name, n in stores.items()}
    read_of = {id(n): name for name, n in read_backs.items()}
    placements = []
    for n in new_graph.nodes:
        if id(n) in pack_ids:
            b, c = n.attrs["blocks"]
            placements.append(Placement(
                n.name, n.op, CPU, None, PACK_RULE,
                f"the host packs {_name(n.inputs[0])} into {n.attrs['layout']} blocks of "
                f"{b}x{c} for {', '.join(pack_users[n.name])}",
            ))  # fmt: skip
        elif id(n) in group_of:
            placements.append(Placement(
                n.name, n.op, VTA, group_of[id(n)], PACKED_INPUT_RULE,
                "the group's loads read the block layout that the host packed",
            ))  # fmt: skip
        elif id(n) in store_of:
            placements.append(Placement(
                n.name, n.op, VTA, store_of[id(n)], PACKED_OUTPUT_RULE,
                "the group's stores write its output in the block layout",
            ))  # fmt: skip
        elif id(n) in read_of:
            placements.append(Placement(
                n.name, n.op, CPU, None, READ_BACK_RULE,
                f"the host reads group {read_of[id(n)]}'s output back from the image and "
                "unpacks it",
            ))  # fmt: skip
        else:
            placements.append(old[id(n)])
    part = replace(partition, graph=new_graph, placements=tuple(placements), groups=tuple(groups))
    return new_graph, part


__all__ = [
    "PACKED_INPUT_RULE",
    "PACKED_OUTPUT_RULE",
    "READ_BACK_RULE",
    "PACK_RULE",
    "block_packing",
    "group_inputs",
    "group_writes",
    "insert_packs",
    "stored_packing",
]
