"""The linker of a network for the accelerator: one DRAM image for the whole network, every
accelerator group's program relocated into it, and activations handed from group to group in the
accelerator's packed layout, in place, in one region whose memory is reused once a tensor is
dead.

The plan is static and made once per compiled network (:func:`plan_network_dram`):

* the image has two parts. The **static** part holds what a program reads and never
  rewrites: its instructions, micro-ops, weights and per-channel tiles, each group's pieces at
  their own place, never shared. The **activation region** holds every group's output tensor
  and the inputs the host writes, placed by liveness and reused;
* a group input (``data``, or the ``residual`` of a qadd) produced by an earlier accelerator
  group in the same packed layout is **not** a tensor of its own: the consumer's LOADs of it
  are pointed at the producer's output, so consecutive accelerator groups pass activations
  through DRAM in the packed layout, with no host step between them;
* an input that the host produces (a host node's result, the network's quantized input; a
  max pool's -128 padding and the first layer's fold are host nodes too,
  :mod:`compiler.targets.vta.host_steps`) is written by the host into the consumer's own
  input tensor, just before the consumer runs;
* liveness is over the run order (:meth:`runtime.vta_target.VtaNetwork.run` walks the graph's
  nodes; an accelerator group runs at its anchor): an output is live from its group's step to
  the last step that reads it (an accelerator group reading it in place or by a host step, a
  host node, or the end for a graph output); an input the host writes lives at its group's
  step only. Tensors are placed largest first at the lowest offset where they overlap no
  tensor live at an overlapping step (:func:`compiler.graph.memory.first_fit`, the one planner
  of the compiler: the CPU's arena is placed by it too, with its own alignment).

Every program's image is cut into pieces (:class:`Segment`): each activation symbol, and the
maximal runs of bytes between them; a LOAD or STORE address is moved by the piece that holds
it (:func:`relocate`). A piece moves by a multiple of every DRAM element size and of the
instruction size (:func:`grain`), so every moved address is a whole element. Running a group is
running its relocated program on the current image; the final image of one group is the
initial image of the next. :func:`check_plan` checks that no two tensors live at the same step
share a byte and that no tensor overlaps the static part.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.model.vta import compile_network
    >>> x = Var("x", TensorType((1, 4, 6, 6), "float32", "NCHW"))
    >>> w1 = Constant(np.ones((4, 4, 3, 3), np.float32), name="w1")
    >>> w2 = Constant(np.ones((4, 4, 3, 3), np.float32), name="w2")
    >>> a = Node("conv2d", (x, w1), {"padding": (1, 1, 1, 1)}, name="a")
    >>> b = Node("conv2d", (Node("relu", (a,), name="r"), w2), {"padding": (1, 1, 1, 1)},
    ...          name="b")
    >>> feed = {"x": np.random.default_rng(0).normal(size=(1, 4, 6, 6)).astype(np.float32)}
    >>> net = compile_network(Graph.from_outputs([x], [b]), "default", calibration=feed)
    >>> plan = plan_network_dram(net)
    >>> plan.groups["b"].aliased, plan.groups["a"].aliased
    (('data',), ())
    >>> [(t.group, t.symbol, t.first, t.last) for t in plan.activations]
    [('a', 'data', 3, 3), ('a', 'out', 3, 5), ('b', 'out', 5, 8)]
    >>> # b's output takes the bytes of a's input, dead after step 1
    >>> plan.activation_bytes, plan.activation_bytes_unshared
    (288, 432)
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from compiler.graph.memory import first_fit
from compiler.targets.vta.errors import LinkError
from isa import HwConfig, MemType, Program
from isa.encoding import INSN_BYTES
from isa.formats import Field, layout
from isa.insn import Opcode
from isa.program import Symbol

if TYPE_CHECKING:
    from compiler.graph import Graph
    from compiler.partition import Partition
    from compiler.topi.vta.qnn import QLayer


class LinkedNetwork(Protocol):
    """What the linker reads of a compiled network: its int8 graph, the partition, the
    config and every accelerator group's compiled layer (by group name)."""

    graph: Graph
    partition: Partition
    config: HwConfig
    layers: dict[str, QLayer]


#: Alignment of the image's two parts (and of the image's size).
ALIGN = 4096
#: Symbol roles whose tensors are activations (placed by liveness), not program constants.
ACTIVATION_ROLES = ("input", "output")


@dataclass(frozen=True)
class Segment:
    """Bytes ``[start, end)`` of a program's own image placed at byte ``to`` of the network
    image.

    Example:
        >>> Segment(64, 128, 4096).move(70)
        4102
    """

    start: int
    end: int
    to: int

    def holds(self, addr: int) -> bool:
        return self.start <= addr < self.end

    def move(self, addr: int) -> int:
        return self.to + addr - self.start


@dataclass(frozen=True)
class GroupImage:
    """Where one group's relocated program lies in the network image."""

    name: str
    insn_base: int
    insn_count: int
    symbols: dict[str, Symbol]
    #: inputs read in place from the producing group's output (``data``, ``residual``)
    aliased: tuple[str, ...]
    #: the pieces of the group's own program image and where they went
    segments: tuple[Segment, ...] = ()
    #: what each input in ``aliased`` reads: the producing group's name, or the slice or
    #: concat of group outputs it reads (``slice s of group g``, ``concat c``)
    producers: dict[str, str] = dataclasses.field(default_factory=dict)

    def program(self, cfg: HwConfig, dram: np.ndarray) -> Program:
        """The group's program over the network image ``dram``."""
        return Program(cfg, dram, self.insn_base, self.insn_count, dict(self.symbols))


@dataclass(frozen=True)
class ActivationTensor:
    """One tensor of the activation region: symbol ``symbol`` of group ``group``'s program
    (or ``(concat node, "concat")``: the tensor an in-place concat's producers store into),
    at byte ``offset`` of the network image, ``nbytes`` reserved (the tensor's bytes rounded
    up to the grain), live from step ``first`` to step ``last`` (both included)."""

    group: str
    symbol: str
    offset: int
    nbytes: int
    first: int
    last: int

    def overlaps(self, other: ActivationTensor) -> bool:
        """Whether the two share a byte and a step."""
        live = self.first <= other.last and other.first <= self.last
        return (
            live
            and self.offset < other.offset + other.nbytes
            and (other.offset < self.offset + self.nbytes)
        )


@dataclass(frozen=True)
class NetworkDram:
    """The initial network image and each group's place in it."""

    dram: np.ndarray
    groups: dict[str, GroupImage]
    activations: tuple[ActivationTensor, ...] = ()
    #: bytes of the static part (instructions, micro-ops, weights, tiles), from byte 0
    static_bytes: int = 0
    #: first byte of the activation region
    activation_base: int = 0
    #: bytes of the activation region, with reuse
    activation_bytes: int = 0
    #: bytes the activations would take each at its own place (no reuse)
    activation_bytes_unshared: int = 0
    #: the sum of the groups' program images, each 4 KiB aligned (a plan that copies every
    #: program whole, at its own base)
    programs_bytes: int = 0
    #: the concat and slice nodes done in place: their producers store into the tensor their
    #: readers load, and the host computes nothing for them
    in_place_nodes: tuple[str, ...] = ()

    @property
    def nbytes(self) -> int:
        return int(self.dram.size)


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def grain(cfg: HwConfig) -> int:
    """The least common multiple of every DRAM element size of ``cfg`` and of the instruction
    size: a piece of a program moved by a multiple of it keeps every address a whole element.

    Example:
        >>> import isa
        >>> grain(isa.load_config("vta-1x16x16"))
        256
    """
    return math.lcm(INSN_BYTES, *(cfg.mem_elem_bytes(int(t)) for t in MemType))


def relocate(prog: Program, segments: Sequence[Segment]) -> tuple[np.ndarray, dict[str, Symbol]]:
    """The instructions of ``prog`` with every LOAD and STORE address moved by the segment
    that holds it, and the moved symbols. Segments must not overlap; an address that no segment
    holds is an error (a LOAD or STORE that moves nothing, ``is_nop``, keeps its address).

    Example:
        >>> import isa
        >>> cfg = isa.load_config("default")
        >>> p = isa.Program.build(cfg, [isa.Load(memory_type=isa.MemType.INP, dram_base=2,
        ...                                      x_size=1, y_size=1, x_stride=1), isa.Finish()],
        ...                       dram_bytes=64)
        >>> code, _ = relocate(p, [Segment(0, 64, 4096)])  # 4 KiB: 1024 elements of 4 bytes
        >>> isa.encoding.decode_stream(code, cfg)[0].dram_base
        1026
    """
    segs = sorted(segments, key=lambda s: s.start)
    starts = [s.start for s in segs]

    def find(addr: int) -> Segment | None:
        k = bisect.bisect_right(starts, addr) - 1
        return segs[k] if k >= 0 and segs[k].holds(addr) else None

    symbols = {}
    for n, s in prog.symbols.items():
        seg = find(s.offset)
        if seg is None or s.offset + s.nbytes > seg.end:
            raise LinkError(f"symbol {n!r}: bytes [{s.offset}, {s.offset + s.nbytes}) are "
                               "not within one placed piece of the program image")  # fmt: skip
        symbols[n] = dataclasses.replace(s, offset=seg.move(s.offset))
    return _relocate_code(prog, segs), symbols


def _field(words: np.ndarray, f: Field) -> np.ndarray:
    """Field ``f`` of every instruction (``words``: n x 2 little-endian 64-bit words), int64."""
    lo, shift = f.lsb // 64, f.lsb % 64
    low_bits = min(f.width, 64 - shift)
    v = (words[:, lo] >> np.uint64(shift)) & np.uint64((1 << low_bits) - 1)
    if low_bits < f.width:  # the field runs on into the next word
        high = words[:, lo + 1] & np.uint64((1 << (f.width - low_bits)) - 1)
        v |= high << np.uint64(low_bits)
    return v.astype(np.int64)


def _set_field(words: np.ndarray, rows: np.ndarray, f: Field, values: np.ndarray) -> None:
    """Write ``values`` (fitting ``f``) into field ``f`` of the instructions at ``rows``."""
    lo, shift = f.lsb // 64, f.lsb % 64
    low_bits = min(f.width, 64 - shift)
    v = values.astype(np.uint64)
    low_mask = np.uint64(((1 << low_bits) - 1) << shift)
    words[rows, lo] = (words[rows, lo] & ~low_mask) | ((v << np.uint64(shift)) & low_mask)
    if low_bits < f.width:
        high_mask = np.uint64((1 << (f.width - low_bits)) - 1)
        words[rows, lo + 1] = (words[rows, lo + 1] & ~high_mask) | (
            (v >> np.uint64(low_bits)) & high_mask
        )


def _relocate_code(prog: Program, segs: Sequence[Segment]) -> np.ndarray:
    """The instruction bytes of ``prog`` with the ``dram_base`` of every LOAD and STORE moved
    by the segment (sorted by start) that holds its first byte. Works on the encoded words
    with numpy: only the one field changes, so every other bit stays as the compiler wrote it,
    and a network of a hundred thousand instructions relocates in milliseconds."""
    cfg = prog.config
    code = np.array(prog.insn_bytes, dtype=np.uint8)
    words = code.view("<u8").reshape(-1, 2)
    opcode = (words[:, 0] & np.uint64(7)).astype(np.int64)
    rows = np.flatnonzero((opcode == int(Opcode.LOAD)) | (opcode == int(Opcode.STORE)))
    if not rows.size:
        return code
    lay = layout("mem", cfg)
    base_field = lay.field("dram_base")
    mem = words[rows]
    mtype = _field(mem, lay.field("memory_type"))
    bad = np.flatnonzero(~np.isin(mtype, [int(t) for t in MemType]))
    if bad.size:
        k = int(rows[bad[0]])
        raise LinkError(f"instruction {k}: field 'memory_type' = {int(mtype[bad[0]])} is not "
                           "a valid MemType")  # fmt: skip
    sizes = np.array([cfg.mem_elem_bytes(int(t)) for t in MemType], np.int64)
    elem = sizes[mtype]
    addr = _field(mem, base_field) * elem
    seg_start = np.array([s.start for s in segs], np.int64)
    seg_end = np.array([s.end for s in segs], np.int64)
    seg_to = np.array([s.to for s in segs], np.int64)
    k = np.searchsorted(seg_start, addr, side="right") - 1
    kk = np.maximum(k, 0)
    held = (k >= 0) & (addr < seg_end[kk]) if segs else np.zeros(addr.shape, bool)
    nop = _field(mem, lay.field("x_size")) == 0
    lost = np.flatnonzero(~held & ~nop)
    if lost.size:
        j = int(lost[0])
        raise LinkError(
            f"instruction {int(rows[j])} ({Opcode(int(opcode[rows[j]])).name.title()} "
            f"{MemType(int(mtype[j])).name}): DRAM byte {int(addr[j])} lies in no placed piece "
            "of the program image"
        )
    moved = np.flatnonzero(held)
    target = seg_to[kk[moved]] + addr[moved] - seg_start[kk[moved]]
    split = np.flatnonzero(target % elem[moved])
    if split.size:
        j = int(moved[split[0]])
        raise LinkError(
            f"instruction {int(rows[j])}: DRAM byte {int(target[split[0]])} is not a whole "
            f"{MemType(int(mtype[j])).name} element ({int(elem[j])} bytes) after relocation"
        )
    base = target // elem[moved]
    over = np.flatnonzero(base > base_field.mask)
    if over.size:
        j = int(moved[over[0]])
        raise LinkError(
            f"instruction {int(rows[j])}: relocated field 'dram_base' = {int(base[over[0]])} "
            f"does not fit {base_field.width} bits"
        )
    _set_field(words, rows[moved], base_field, base)
    return code


def run_steps(net: LinkedNetwork) -> tuple[dict[int, int], int]:
    """The step of every node (by ``id``) in the order a run of the network executes them,
    its index in the graph's order (every node of an accelerator group at its anchor's), and
    the step after the last (when the graph's outputs are read)."""
    nodes = net.graph.nodes
    index = {id(n): k for k, n in enumerate(nodes)}
    step = dict(index)
    for g in net.partition.groups:
        for n in g.nodes:
            step[id(n)] = index[id(g.anchor)]
    return step, len(nodes)


#: The key of an activation tensor of the plan: ``(group, symbol)``, or ``(concat node, CONCAT)``
#: for a concat whose operands' producers store into one tensor.
CONCAT = "concat"


@dataclass(frozen=True)
class View:
    """A group input read in place: bytes from ``offset`` of activation tensor ``tensor`` (a
    producer's ``out``, or an in-place concat), how in words (``via``: the producing group's
    name, or the slice or concat it reads)."""

    tensor: tuple[str, str]
    offset: int
    via: str


@dataclass
class _InPlace:
    """Which group inputs the plan reads in place and which concats it builds in place."""

    #: per group, its inputs read in place
    views: dict[str, dict[str, View]]
    #: per in-place concat (by node name): its producing groups in order, and its bytes
    concats: dict[str, tuple[list[str], int]]
    #: the concat (and byte offset) of each group whose output is stored into one
    stored_in: dict[str, tuple[str, int]]
    #: per tensor key, the steps of the readers that read a view of it
    readers: dict[tuple[str, str], list[int]]
    #: slice and concat nodes whose every reader reads them in place: the host runs nothing
    nodes: tuple[str, ...]


def _channel_view(value: Any, producer: dict[int, Any]) -> tuple[Any, int, int] | None:
    """``(group, first channel, end channel)`` when ``value`` is an accelerator group's output
    or a channel slice of one (axis 1 only, step 1, every other axis whole)."""
    g = producer.get(id(value))
    if g is not None:
        return g, 0, int(value.type.shape[1]) if value.type.ndim >= 2 else 0
    if getattr(value, "op", None) != "strided_slice" or value.type.ndim != 4:
        return None
    src = value.inputs[0]
    g = producer.get(id(src))
    a = value.attrs
    if g is None or any(s != 1 for s in a["strides"]):
        return None
    for k, (b, e, n) in enumerate(zip(a["begin"], a["end"], src.type.shape, strict=True)):
        if k != 1 and (b != 0 or min(e, n) != n):
            return None
    return g, int(a["begin"][1]), int(min(a["end"][1], src.type.shape[1]))


def _in_place(net: LinkedNetwork, progs: dict[str, Program]) -> _InPlace:
    """Group inputs read in place: a producing group's whole output (``data`` or
    ``residual``), a block-aligned channel slice of it (a Split), or a concat whose operands'
    producers store side by side into one tensor (their outputs, or consecutive slices that
    cover them, in order, in the packed layout with one batch block, so that the channel
    blocks of one operand follow the other's). Anything else the host writes."""
    cfg = net.config
    # every memory type an activation is read or written as (the accumulator's int32 too)
    kinds = (MemType.INP, MemType.OUT, MemType.ACC, MemType.ACC8)
    align = math.lcm(*(cfg.mem_elem_bytes(int(t)) for t in kinds))
    groups = net.partition.groups
    producer = {id(g.output): g for g in groups}
    out = {g.name: progs[g.name].symbols["out"] for g in groups}

    def blocked(g: Any) -> bool:  # one batch block, whole channel blocks, int8
        sym = out[g.name]
        shape = tuple(sym.shape)
        return (
            len(shape) == 6 and shape[0] == 1 and shape[4] == 1 and np.dtype(sym.dtype) == np.int8
            and shape[1] * shape[5] == g.output.type.shape[1]
        )  # fmt: skip

    def slice_bytes(g: Any, begin: int) -> int | None:
        shape = tuple(out[g.name].shape)
        if begin % shape[5]:
            return None
        return begin // shape[5] * int(np.prod(shape[2:]))

    # concats whose operands' producers store into one tensor
    concats: dict[str, tuple[list[str], int]] = {}
    stored_in: dict[str, tuple[str, int]] = {}
    concat_shape: dict[int, tuple[int, ...]] = {}
    for node in net.graph.nodes:
        if node.op != "concat" or node.attrs["axis"] != 1 or node.type.ndim != 4:
            continue
        if not node.name or node.type.dtype != "int8":
            continue
        operands = [_channel_view(v, producer) for v in node.inputs]
        if any(v is None for v in operands):
            continue
        order: list[Any] = []
        for g, b, e in operands:  # type: ignore[misc]
            if order and order[-1][0] is g and order[-1][2] == b:
                order[-1][2] = e
            else:
                order.append([g, b, e])
        names = [g.name for g, _, _ in order]
        ok = len(set(names)) == len(names) and all(
            b == 0 and e == g.output.type.shape[1] and blocked(g) and g.name not in stored_in
            for g, b, e in order
        )
        shapes = {tuple(out[n].shape[2:]) for n in names}
        if not ok or len(shapes) != 1:
            continue
        offsets, at = [], 0
        for n in names:
            offsets.append(at)
            at += out[n].nbytes
        if any(o % align for o in offsets):
            continue
        h, w, _, bc = next(iter(shapes))
        concat_shape[id(node)] = (1, at // (h * w * bc), h, w, 1, bc)
        concats[node.name] = (names, at)
        stored_in.update((n, (node.name, o)) for n, o in zip(names, offsets, strict=True))

    def tensor_of(g: Any) -> tuple[tuple[str, str], int]:
        if g.name in stored_in:
            cat, off = stored_in[g.name]
            return (cat, CONCAT), off
        return (g.name, "out"), 0

    step, _ = run_steps(net)
    views: dict[str, dict[str, View]] = {}
    readers: dict[tuple[str, str], list[int]] = {}
    read_in_place: dict[int, int] = {}  # slice/concat node id -> readers that take it in place
    for g in groups:
        mine: dict[str, View] = {}
        inputs = [("data", g.anchor.inputs[0])]
        if g.residual is not None:
            inputs.append(("residual", g.residual))
        for name, value in inputs:
            sym = progs[g.name].symbols[name]
            if id(value) in concat_shape:
                if tuple(sym.shape) != concat_shape[id(value)] or np.dtype(sym.dtype) != np.int8:
                    continue
                key, off, via = (value.name, CONCAT), 0, f"concat {value.name}"
            else:
                cv = _channel_view(value, producer)
                if cv is None:
                    continue
                src, b, e = cv
                whole = b == 0 and e == src.output.type.shape[1] and value is src.output
                if whole:
                    o = out[src.name]
                    if tuple(o.shape) != tuple(sym.shape) or o.dtype != sym.dtype:
                        continue
                    skip = 0
                else:
                    shape = tuple(out[src.name].shape)
                    skip_ = slice_bytes(src, b) if blocked(src) else None
                    if skip_ is None or (e - b) % shape[5] or tuple(sym.shape) != (
                        1, (e - b) // shape[5], *shape[2:]
                    ):  # fmt: skip
                        continue
                    skip = skip_
                key, base = tensor_of(src)
                off = base + skip
                if off % align:
                    continue
                via = src.name if whole else f"slice {value.name} of group {src.name}"
            mine[name] = View(key, off, via)
            readers.setdefault(key, []).append(step[id(g.anchor)])
            if id(value) not in producer:
                read_in_place[id(value)] = read_in_place.get(id(value), 0) + 1
        views[g.name] = mine
    users = net.graph.users
    outputs = {id(v) for v in net.graph.outputs}

    def unread(n: Any) -> bool:  # every reader takes it in place: the host need not compute it
        count = len(users.get(id(n), []))
        return bool(n.name) and id(n) not in outputs and read_in_place.get(id(n), 0) == count > 0

    # a concat that no host step computes reads its operand slices in place too (one that a
    # host step still computes, for a host reader, needs them computed)
    done = [n for n in net.graph.nodes if n.name in concats and unread(n)]
    for node in done:
        for v in node.inputs:
            if id(v) not in producer:
                read_in_place[id(v)] = read_in_place.get(id(v), 0) + 1
    nodes = tuple(n.name for n in net.graph.nodes
                  if (n.op == "strided_slice" and unread(n)) or n in done)  # fmt: skip
    return _InPlace(views, concats, stored_in, readers, nodes)


def _static_pieces(prog: Program, activation: set[str]) -> list[tuple[int, int]]:
    """The maximal runs of ``prog``'s image outside its activation symbols."""
    holes = sorted((s.offset, s.offset + s.nbytes) for n, s in prog.symbols.items()
                   if n in activation)  # fmt: skip
    pieces, at = [], 0
    for lo, hi in holes:
        if lo > at:
            pieces.append((at, lo))
        at = max(at, hi)
    if at < prog.dram.size:
        pieces.append((at, prog.dram.size))
    return pieces


def plan_network_dram(net: LinkedNetwork) -> NetworkDram:
    """Lay every group of ``net`` out in one image (see the module docstring)."""
    cfg = net.config
    unit = grain(cfg)
    groups = net.partition.groups
    progs: dict[str, Program] = {}
    for g in groups:
        layer = net.layers[g.name]
        prog = layer.program.copy()
        for key, array in layer.params.items():
            prog.write(key, array)
        progs[g.name] = prog
    places = _in_place(net, progs)
    in_place = places.views
    step, end = run_steps(net)
    users = net.graph.users
    outputs = {id(v) for v in net.graph.outputs}

    def out_last(g: Any) -> int:
        # after the build's pack pass the host reads an output through the group's store
        stored = (g.output, *((g.store,) if g.store is not None else ()))
        readers = [step[id(u)] for v in stored for u in users.get(id(v), [])]
        extra = places.readers.get((g.name, "out"), [])
        return max([step[id(g.anchor)], *readers, *extra,
                    *([end] if id(g.output) in outputs else [])])  # fmt: skip

    # the activations: every group's output (or the concat it is stored into), and its inputs
    # that are not read in place
    lives: list[tuple[str, str, int, int, int]] = []  # group, symbol, nbytes, first, last
    activation: dict[str, set[str]] = {}
    for g in groups:
        prog, params = progs[g.name], net.layers[g.name].params
        names = {n for n, s in prog.symbols.items()
                 if s.role in ACTIVATION_ROLES and n not in params}  # fmt: skip
        activation[g.name] = names
        first = step[id(g.anchor)]
        for n in sorted(names):
            if n in in_place[g.name] or (n == "out" and g.name in places.stored_in):
                continue
            last = out_last(g) if n == "out" else first
            lives.append((g.name, n, prog.symbols[n].nbytes, first, last))
    by_name = {g.name: g for g in groups}
    node_of = {n.name: n for n in net.graph.nodes if n.name in places.concats}
    for cat, (members, nbytes) in places.concats.items():
        node = node_of[cat]
        first = min(step[id(by_name[n].anchor)] for n in members)
        last = max([*(out_last(by_name[n]) for n in members),
                    *(step[id(u)] for u in users.get(id(node), [])),
                    *places.readers.get((cat, CONCAT), []),
                    *([end] if id(node) in outputs else [])])  # fmt: skip
        lives.append((cat, CONCAT, nbytes, first, last))

    # the static part: each program's pieces outside its activations, one after the other
    segments: dict[str, list[Segment]] = {}
    cursor = 0
    for g in groups:
        segments[g.name] = []
        for lo, hi in _static_pieces(progs[g.name], activation[g.name]):
            to = cursor + (lo - cursor) % unit
            segments[g.name].append(Segment(lo, hi, to))
            cursor = to + hi - lo
    static_bytes = cursor

    base = _align(static_bytes, ALIGN)
    offsets, region = first_fit([(nb, f, la) for _, _, nb, f, la in lives], unit)
    tensors = tuple(
        ActivationTensor(gn, n, base + off, _align(nb, unit), f, la)
        for (gn, n, nb, f, la), off in zip(lives, offsets, strict=True)
    )
    where = {(t.group, t.symbol): t.offset for t in tensors}
    moved: dict[str, list[Segment]] = {}  # each activation symbol, to its tensor
    for g in groups:
        syms = progs[g.name].symbols
        moved[g.name] = []
        for n in sorted(activation[g.name]):
            view = in_place[g.name].get(n)
            if view is not None:
                to = where[view.tensor] + view.offset
            elif n == "out" and g.name in places.stored_in:
                cat, off = places.stored_in[g.name]
                to = where[(cat, CONCAT)] + off
            else:
                to = where[(g.name, n)]
            moved[g.name].append(Segment(syms[n].offset, syms[n].offset + syms[n].nbytes, to))

    dram = np.zeros(_align(base + region, ALIGN), np.uint8)
    images: dict[str, GroupImage] = {}
    for g in groups:
        prog = progs[g.name]
        static = segments[g.name]
        code, symbols = relocate(prog, static + moved[g.name])
        for seg in static:
            dram[seg.to : seg.to + seg.end - seg.start] = prog.dram[seg.start : seg.end]
        insn_end = prog.insn_base + code.size
        home = next((s for s in static if s.holds(prog.insn_base) and insn_end <= s.end), None)
        if home is None:
            raise LinkError(f"group {g.name}: the instructions [{prog.insn_base}, "
                               f"{insn_end}) overlap an activation tensor")  # fmt: skip
        at = home.move(prog.insn_base)
        dram[at : at + code.size] = code
        images[g.name] = GroupImage(
            g.name,
            at,
            prog.insn_count,
            symbols,
            tuple(in_place[g.name]),
            tuple(static + moved[g.name]),
            {n: v.via for n, v in in_place[g.name].items()},
        )
    programs = sum(_align(p.dram.size, ALIGN) for p in progs.values())
    plan = NetworkDram(
        dram, images, tensors, static_bytes, base, region,
        sum(t.nbytes for t in tensors), programs, places.nodes,
    )  # fmt: skip
    check_plan(plan)
    return plan


def check_plan(plan: NetworkDram) -> None:
    """Raise :class:`LinkError` naming the tensors when two activations live at the same
    step share a byte, or when an activation lies outside the activation region."""
    tensors = plan.activations
    lo = max(plan.activation_base, plan.static_bytes)
    hi = plan.activation_base + plan.activation_bytes
    for t in tensors:
        if t.offset < lo or t.offset + t.nbytes > hi:
            raise LinkError(
                f"DRAM plan: {t.group}.{t.symbol} at [{t.offset}, {t.offset + t.nbytes}) lies "
                f"outside the activation region [{lo}, {hi})"
            )
    for k, a in enumerate(tensors):
        for b in tensors[k + 1 :]:
            if a.overlaps(b):
                raise LinkError(
                    f"DRAM plan: {a.group}.{a.symbol} (steps {a.first}-{a.last}) and "
                    f"{b.group}.{b.symbol} (steps {b.first}-{b.last}) share bytes while both "
                    "are live"
                )


__all__ = [
    "ActivationTensor",
    "GroupImage",
    "NetworkDram",
    "Segment",
    "check_plan",
    "first_fit",
    "grain",
    "plan_network_dram",
    "relocate",
    "run_steps",
]
