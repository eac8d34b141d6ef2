"""Layout transformation to the packed ``NCHW{n}n{c}c`` layout a target asks for.

Convolutions with ``groups == 1`` whose output channels divide into blocks of ``block_c`` run
packed (output channels that fill only half blocks, such as 88 or 24 with blocks of 16, run
packed with kernel ``OIHW{c}i{c/2}o`` and their output is transformed to NCHW at once): data
``NCHW{n}n{c}c``, kernel ``OIHW{c}i{c}o``, the bias a separate ``add`` of a packed per-channel
constant. An NCHW input with fewer channels than a block (the first convolution's RGB) becomes
one block of its own channels (data ``NCHW{n}n3c``, kernel ``OIHW3i{c}o``; the output is
``NCHW{n}n{c}c``), so the reduction runs over the real channels only; other input channels that
do not divide are padded with zeros explicitly (``pad`` on the data, zero input channels in the
weight), so ``layout_transform`` never pads. Around them, ops that can take the packed layout
follow their input: elementwise ops (per-channel constants are reshaped and transformed to
``(1, C/c, 1, 1, 1, c)``), pooling, channel concat, spatial pad, a slice that takes whole
channel blocks (a Split on channels) and any rows and columns, a resize of the rows and
columns. A depthwise convolution (one
channel per group) whose channels divide into blocks runs packed too, with kernel
``OIHW1i{c}o``. Everything else (grouped conv, dense, softmax, reshape, ...) runs in NCHW. A
``layout_transform`` is placed only where a packed value meets an NCHW reader (once per value),
and the graph outputs are NCHW.

The transforms of constants are nodes here; constant folding (the pipeline's
``fold_layout_constants``) turns them into pre-packed constants.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 3, 8, 8), "float32", "NCHW"))
    >>> w = Constant(np.ones((16, 3, 3, 3), np.float32), name="w")
    >>> y = Node("relu", (Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="c"),))
    >>> g = pack_layout(Graph.from_outputs([x], [y]), block_c=16)
    >>> [n.op for n in g.nodes]
    ['layout_transform', 'layout_transform', 'conv2d', 'relu', 'layout_transform']
    >>> g.nodes[2].attrs["data_layout"], g.nodes[2].attrs["kernel_layout"], g.nodes[2].type.shape
    ('NCHW1n3c', 'OIHW3i16o', (1, 1, 8, 8, 1, 16))
"""

from __future__ import annotations

from compiler.graph.ir import Constant, Graph, Node, Value, Var
from compiler.graph.ops import is_elementwise, parse_packed


class _Packer:
    def __init__(self, block_c: int, block_n: int) -> None:
        self.bc, self.bn = block_c, block_n
        self.layout = f"NCHW{block_n}n{block_c}c"
        self.broadcast_layout = f"NCHW1n{block_c}c"
        self.new: dict[int, Value] = {}  # old value -> new value (packed or not, see below)
        self.is_packed: set[int] = set()  # old values whose new value is packed
        self.plain_memo: dict[int, Value] = {}
        self.packed_memo: dict[int, Value] = {}
        self.nodes: list[Node] = []

    def emit(self, node: Node) -> Node:
        self.nodes.append(node)
        return node

    def get(self, old: Value) -> Value:
        return self.new.get(id(old), old)

    def divides(self, shape: tuple[int, ...]) -> bool:
        return len(shape) == 4 and shape[0] % self.bn == 0 and shape[1] % self.bc == 0

    def plain(self, old: Value) -> Value:
        """The NCHW form of an old value."""
        if id(old) not in self.is_packed:
            return self.get(old)
        if id(old) not in self.plain_memo:
            label = old.name if isinstance(old, (Var, Constant)) else old.label
            self.plain_memo[id(old)] = self.emit(
                Node(
                    "layout_transform",
                    (self.get(old),),
                    {"src_layout": self.layout, "dst_layout": "NCHW"},
                    name=f"{label}.to_NCHW",
                )
            )
        return self.plain_memo[id(old)]

    def packed(self, old: Value) -> Value:
        """The packed form of an old value of shape (N, C, H, W) (after left-padding the rank
        to 4 with ones) whose C divides into blocks and whose N does too, or is 1: a
        broadcast operand (a per-channel constant) is packed ``NCHW1n{c}c``, which broadcasts
        over any batch block."""
        if id(old) in self.is_packed:
            return self.get(old)
        if id(old) not in self.packed_memo:
            label = old.name if isinstance(old, (Var, Constant)) else old.label
            value = self.get(old)
            if value.type.ndim < 4:
                shape = (1,) * (4 - value.type.ndim) + value.type.shape
                value = self.emit(
                    Node("reshape", (value,), {"newshape": shape}, name=f"{label}.nchw")
                )
            layout = self.layout if value.type.shape[0] % self.bn == 0 else self.broadcast_layout
            self.packed_memo[id(old)] = self.emit(
                Node(
                    "layout_transform",
                    (value,),
                    {"src_layout": "NCHW", "dst_layout": layout},
                    name=f"{label}.to_{layout}",
                )
            )
        return self.packed_memo[id(old)]

    def packable_operand(self, old: Value, out_c: int) -> bool:
        t = old.type
        if t.size == 1:
            return True
        if t.ndim > 4:
            return False
        shape = (1,) * (4 - t.ndim) + t.shape
        return (
            shape[1] == out_c
            and shape[1] % self.bc == 0
            and (shape[0] == 1 or shape[0] % self.bn == 0)
        )

    def operand(self, old: Value) -> Value:
        if old.type.size == 1 and id(old) not in self.is_packed:
            return self.get(old)
        return self.packed(old)

    # ---------------------------------------------------------------- per operator

    def conv2d(self, node: Node) -> Value | None:
        a = node.attrs
        x, w = node.inputs[0], node.inputs[1]
        if self.is_depthwise(node):
            return self.depthwise(node)
        ob = self.output_block(node)
        if (
            a["groups"] != 1
            or a["data_layout"] != "NCHW"
            or a["kernel_layout"] != "OIHW"
            or ob is None
            or x.type.shape[0] % self.bn
        ):
            return None
        c = x.type.shape[1]
        cp = -(-c // self.bc) * self.bc
        kernel_layout = f"OIHW{self.bc}i{ob}o"
        if cp == c:
            data = self.packed(x)
            weight = self.get(w)
        elif c < self.bc and id(x) not in self.is_packed:
            # Fewer input channels than a block (an RGB input): one block of c channels, so
            # the reduction runs over the real channels only (no zero channels to multiply).
            layout = f"NCHW{self.bn}n{c}c"
            data = self.emit(
                Node(
                    "layout_transform",
                    (self.plain(x),),
                    {"src_layout": "NCHW", "dst_layout": layout},
                    name=f"{node.label}.data_to_{layout}",
                )
            )
            weight = self.get(w)
            kernel_layout = f"OIHW{c}i{ob}o"
        else:
            width = ((0, 0), (0, cp - c), (0, 0), (0, 0))
            padded = self.emit(
                Node(
                    "pad", (self.plain(x),), {"pad_width": width}, name=f"{node.label}.pad_channels"
                )
            )
            data = self.emit(
                Node(
                    "layout_transform",
                    (padded,),
                    {"src_layout": "NCHW", "dst_layout": self.layout},
                    name=f"{node.label}.data_to_{self.layout}",
                )
            )
            weight = self.emit(
                Node("pad", (self.get(w),), {"pad_width": width}, name=f"{node.label}.pad_weight")
            )
        wname = w.name if isinstance(w, (Var, Constant)) else w.label
        weight = self.emit(
            Node(
                "layout_transform",
                (weight,),
                {"src_layout": "OIHW", "dst_layout": kernel_layout},
                name=f"{wname or node.label}.packed",
            )
        )
        if ob != self.bc:
            return self.narrow_conv(node, data, weight, kernel_layout)
        return self.packed_conv(node, data, weight, kernel_layout)

    def output_block(self, node: Node) -> int | None:
        """The output channel block of a packed conv2d: the layout's block, else half of it
        when that divides the output channels (EfficientNet-Lite2's 88 and 120), else None
        (the convolution stays NCHW)."""
        n, o = node.type.shape[0], node.type.shape[1]
        if len(node.type.shape) != 4 or n % self.bn:
            return None
        if o % self.bc == 0:
            return self.bc
        half = self.bc // 2
        return half if self.bc % 2 == 0 and half > 1 and o % half == 0 else None

    def narrow_conv(self, node: Node, data: Value, weight: Value, kernel_layout: str) -> Value:
        """A conv2d whose output channels fill only half blocks: packed with the half block
        (all its loads and FMAs vectors, where NCHW's rows of an odd width fill a vector and one
        lane of another), its output transformed to NCHW right away (the packed region keeps
        one block size) and the bias added there. The result is NCHW, not packed."""
        attrs = dict(node.attrs)
        attrs.update(data_layout=data.type.layout, kernel_layout=kernel_layout)
        conv = self.emit(Node("conv2d", (data, weight), attrs, f"{node.label}.conv"))
        plain = self.emit(
            Node(
                "layout_transform",
                (conv,),
                {"src_layout": conv.type.layout, "dst_layout": "NCHW"},
                name=node.name if len(node.inputs) == 2 else f"{node.label}.to_NCHW",
            )
        )
        if len(node.inputs) == 2:
            return plain
        b4 = self.bias_nchw(node)
        return self.emit(Node("add", (plain, b4), name=node.name))

    def bias_nchw(self, node: Node) -> Value:
        """A conv2d's bias (its third input) as an NCHW ``(1, C, 1, 1)`` value to add."""
        bias = node.inputs[2]
        return self.emit(
            Node(
                "reshape",
                (self.get(bias),),
                {"newshape": (1, bias.type.shape[0], 1, 1)},
                name=f"{_bias_label(node)}.nchw",
            )
        )

    def is_depthwise(self, node: Node) -> bool:
        """One input and one output channel per group, channels in whole blocks."""
        a, c = node.attrs, node.inputs[0].type.shape[1]
        return (
            a["groups"] > 1
            and a["groups"] == c == node.type.shape[1]
            and a["data_layout"] == "NCHW"
            and a["kernel_layout"] == "OIHW"
            and self.divides(node.type.shape)
            and node.inputs[0].type.shape[0] % self.bn == 0
        )

    def depthwise(self, node: Node) -> Value:
        """A depthwise convolution runs packed: each channel block is one vector, whatever
        the width (in NCHW a row of 17 columns fills one vector and a bit of another)."""
        w = node.inputs[1]
        kernel_layout = f"OIHW1i{self.bc}o"
        wname = w.name if isinstance(w, (Var, Constant)) else w.label
        weight = self.emit(
            Node(
                "layout_transform",
                (self.get(w),),
                {"src_layout": "OIHW", "dst_layout": kernel_layout},
                name=f"{wname or node.label}.packed",
            )
        )
        return self.packed_conv(node, self.packed(node.inputs[0]), weight, kernel_layout)

    def packed_conv(self, node: Node, data: Value, weight: Value, kernel_layout: str) -> Value:
        """The packed conv2d of ``node`` on packed ``data`` and ``weight``; a bias becomes an
        ``add`` of a packed per-channel constant."""
        attrs = dict(node.attrs)
        attrs.update(data_layout=data.type.layout, kernel_layout=kernel_layout)
        if len(node.inputs) == 2:
            return self.emit(Node("conv2d", (data, weight), attrs, node.name))
        conv = self.emit(Node("conv2d", (data, weight), attrs, f"{node.label}.conv"))
        b4 = self.bias_nchw(node)
        bp = self.emit(
            Node(
                "layout_transform",
                (b4,),
                {"src_layout": "NCHW", "dst_layout": self.broadcast_layout},
                name=f"{_bias_label(node)}.packed",
            )
        )
        return self.emit(Node("add", (conv, bp), name=node.name))

    def elementwise(self, node: Node) -> Value | None:
        t = node.type
        if t.ndim != 4 or not self.divides(t.shape):
            return None
        if not any(id(v) in self.is_packed for v in node.inputs):
            return None
        if not all(self.packable_operand(v, t.shape[1]) for v in node.inputs):
            return None
        ins = tuple(self.operand(v) for v in node.inputs)
        return self.emit(Node(node.op, ins, node.attrs, node.name))

    def pool(self, node: Node) -> Value | None:
        x = node.inputs[0]
        if id(x) not in self.is_packed or node.attrs["layout"] != "NCHW":
            return None
        attrs = dict(node.attrs)
        attrs["layout"] = self.layout
        return self.emit(Node(node.op, (self.get(x),), attrs, node.name))

    def concat(self, node: Node) -> Value | None:
        if node.attrs["axis"] != 1 or node.type.ndim != 4:
            return None
        if not all(id(v) in self.is_packed for v in node.inputs):
            return None
        return self.emit(
            Node("concat", tuple(self.get(v) for v in node.inputs), node.attrs, node.name)
        )

    def pad(self, node: Node) -> Value | None:
        x = node.inputs[0]
        pw = node.attrs["pad_width"]
        if id(x) not in self.is_packed or pw[0] != (0, 0) or pw[1] != (0, 0):
            return None
        attrs = dict(node.attrs)
        attrs["pad_width"] = ((0, 0), (0, 0), pw[2], pw[3], (0, 0), (0, 0))
        return self.emit(Node("pad", (self.get(x),), attrs, node.name))

    def strided_slice(self, node: Node) -> Value | None:
        """A slice of a packed value that keeps its batch and takes whole channel blocks
        (a Split of YOLO's C2f blocks), any rows and columns: the same slice of the blocks."""
        x = node.inputs[0]
        if id(x) not in self.is_packed or node.type.ndim != 4:
            return None
        b, e, s = (tuple(node.attrs[k]) for k in ("begin", "end", "strides"))
        n = x.type.shape[0]
        if (b[0], e[0], s[0]) != (0, n, 1) or s[1] != 1 or b[1] % self.bc or e[1] % self.bc:
            return None
        attrs = {
            "begin": (0, b[1] // self.bc, b[2], b[3], 0, 0),
            "end": (n // self.bn, e[1] // self.bc, e[2], e[3], self.bn, self.bc),
            "strides": (1, 1, s[2], s[3], 1, 1),
        }
        return self.emit(Node("strided_slice", (self.get(x),), attrs, node.name))

    def resize(self, node: Node) -> Value | None:
        """A resize of the rows and columns of a packed value: the same on the blocks."""
        x = node.inputs[0]
        a = node.attrs
        if id(x) not in self.is_packed or node.type.ndim != 4:
            return None
        sizes, scales = tuple(a["sizes"]), tuple(a["scales"])
        if sizes[:2] != x.type.shape[:2] or scales[:2] != (1.0, 1.0):
            return None
        n, c = sizes[:2]
        attrs = dict(a)
        attrs["sizes"] = (n // self.bn, c // self.bc, sizes[2], sizes[3], self.bn, self.bc)
        attrs["scales"] = (1.0, 1.0, scales[2], scales[3], 1.0, 1.0)
        return self.emit(Node("resize", (self.get(x),), attrs, node.name))

    def visit(self, node: Node) -> None:
        handler = None
        if node.op == "conv2d":
            handler = self.conv2d
        elif is_elementwise(node.op):
            handler = self.elementwise
        elif node.op in ("max_pool2d", "avg_pool2d", "global_avg_pool2d"):
            handler = self.pool
        elif node.op == "concat":
            handler = self.concat
        elif node.op == "pad":
            handler = self.pad
        elif node.op == "strided_slice":
            handler = self.strided_slice
        elif node.op == "resize":
            handler = self.resize
        result = handler(node) if handler is not None else None
        if result is not None:
            self.new[id(node)] = result
            if parse_packed(result.type.layout) is not None:
                self.is_packed.add(id(node))
            else:  # a narrow conv2d's NCHW output
                assert node.op == "conv2d" and result.type.shape == node.type.shape, node.label
            return
        ins = tuple(self.plain(v) for v in node.inputs)
        if all(a is b for a, b in zip(ins, node.inputs, strict=True)):
            self.new[id(node)] = self.emit(node)
        else:
            self.new[id(node)] = self.emit(Node(node.op, ins, node.attrs, node.name))


def pack_layout(graph: Graph, block_c: int = 16, block_n: int = 1) -> Graph:
    """Run the graph's convolutions and the ops around them in ``NCHW{block_n}n{block_c}c``
    (see the module docstring)."""
    packer = _Packer(block_c, block_n)
    for node in graph.nodes:
        packer.visit(node)
    outputs = tuple(packer.plain(v) for v in graph.outputs)
    return Graph(graph.inputs, tuple(packer.nodes), outputs, graph.name)


def _bias_label(node: Node) -> str:
    """The name a conv2d's bias gives the nodes made from it (the conv's label if it has none)."""
    bias = node.inputs[2]
    name = bias.name if isinstance(bias, (Var, Constant)) else bias.label
    return name or node.label


__all__ = ["pack_layout"]
