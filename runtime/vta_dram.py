"""One DRAM image for a whole network: every accelerator group's program relocated into it, and
activations handed from group to group in the accelerator's packed layout, in place.

The plan is static and made once per compiled network (:func:`plan_network_dram`):

* each group's program image (instructions, micro-ops, weights, per-channel tiles and its own
  tensors) is copied at its own base, 4 KiB aligned, one after the other; every LOAD and STORE
  address is moved by the base (``dram_base`` counts elements of the memory type, and the base
  is a multiple of every element size);
* a group input (``data`` or a fused qadd's ``residual``) produced by an earlier accelerator
  group in the same packed layout is **not** copied: the consumer's LOADs of it are pointed at
  the producer's output tensor, so consecutive accelerator groups pass activations through
  DRAM in the packed layout, with no host step between them;
* an input that the host produces (a host node's result, the network's quantized input) or that
  needs a host step (the max pool's -128 padding, the first layer's space-to-depth fold) is
  written by the host into the consumer's own input tensor in the image.

Activations are never reused (each tensor keeps its own bytes): a simple plan, at most the sum
of the programs' images. Running a group is running its relocated program on the current
image; the final image of one group is the initial image of the next.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from runtime.vta_target import compile_network
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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from isa import Load, Program, Store
from isa.encoding import encode_stream
from isa.program import Symbol
from runtime.errors import SessionError

if TYPE_CHECKING:
    from runtime.vta_target import VtaNetwork

ALIGN = 4096


@dataclass(frozen=True)
class GroupImage:
    """Where one group's relocated program lies in the network image."""

    name: str
    base: int
    insn_base: int
    insn_count: int
    symbols: dict[str, Symbol]
    #: inputs read in place from the producing group's output (``data``, ``residual``)
    aliased: tuple[str, ...]

    def program(self, cfg: object, dram: np.ndarray) -> Program:
        """The group's program over the network image ``dram``."""
        return Program(cfg, dram, self.insn_base, self.insn_count, dict(self.symbols))  # type: ignore[arg-type]


@dataclass(frozen=True)
class NetworkDram:
    """The initial network image and each group's place in it."""

    dram: np.ndarray
    groups: dict[str, GroupImage]

    @property
    def nbytes(self) -> int:
        return int(self.dram.size)


def relocate(
    prog: Program, base: int, remap: dict[str, int]
) -> tuple[np.ndarray, dict[str, Symbol]]:
    """The instructions of ``prog`` moved to ``base`` (bytes), with the tensors named in
    ``remap`` read at the given absolute byte offsets instead; and the moved symbols.

    Example:
        >>> import isa
        >>> cfg = isa.load_config("default")
        >>> p = isa.Program.build(cfg, [isa.Load(memory_type=isa.MemType.INP, dram_base=2,
        ...                                      x_size=1, y_size=1, x_stride=1), isa.Finish()],
        ...                       dram_bytes=64)
        >>> code, _ = relocate(p, 4096, {})  # 4 KiB = 1024 input elements of 4 bytes
        >>> isa.encoding.decode_stream(code, cfg)[0].dram_base
        1026
    """
    cfg = prog.config
    syms = prog.symbols
    moved = []
    for k, insn in enumerate(prog.instructions()):
        if isinstance(insn, Load | Store):
            elem = cfg.mem_elem_bytes(int(insn.memory_type))
            addr = insn.dram_base * elem
            target = base + addr
            if not insn.is_nop:
                for name, new in remap.items():
                    s = syms[name]
                    if s.offset <= addr < s.offset + s.nbytes:
                        target = new + (addr - s.offset)
            if target % elem:
                raise SessionError(
                    f"instruction {k}: DRAM byte {target} is not a whole "
                    f"{insn.memory_type.name} element ({elem} bytes) after relocation"
                )
            insn = dataclasses.replace(insn, dram_base=target // elem)
        moved.append(insn)
    symbols = {
        n: dataclasses.replace(s, offset=remap.get(n, base + s.offset)) for n, s in syms.items()
    }
    return encode_stream(moved, cfg), symbols


def plan_network_dram(net: VtaNetwork) -> NetworkDram:
    """Lay every group of ``net`` out in one image (see the module docstring)."""
    from runtime.vta_target import host_prepares

    groups = net.partition.groups
    bases: dict[str, int] = {}
    total = 0
    for g in groups:
        total = -(-total // ALIGN) * ALIGN
        bases[g.name] = total
        total += net.layers[g.name].program.dram.size
    dram = np.zeros(-(-total // ALIGN) * ALIGN, np.uint8)
    producer = {id(g.output): g for g in groups}
    images: dict[str, GroupImage] = {}
    for g in groups:
        layer = net.layers[g.name]
        prog = layer.program.copy()
        for key, array in layer.params.items():
            prog.write(key, array)
        remap: dict[str, int] = {}
        inputs = [("data", g.anchor.inputs[0])]
        if g.residual is not None:
            inputs.append(("residual", g.residual))
        for name, value in inputs:
            src = producer.get(id(value))
            if src is None or (name == "data" and host_prepares(g, net.config)):
                continue
            out = net.layers[src.name].program.symbols["out"]
            mine = prog.symbols[name]
            if tuple(out.shape) != tuple(mine.shape) or out.dtype != mine.dtype:
                continue
            remap[name] = bases[src.name] + out.offset
        base = bases[g.name]
        code, symbols = relocate(prog, base, remap)
        dram[base : base + prog.dram.size] = prog.dram
        dram[base + prog.insn_base : base + prog.insn_base + code.size] = code
        images[g.name] = GroupImage(
            g.name, base, base + prog.insn_base, prog.insn_count, symbols, tuple(remap)
        )
    return NetworkDram(dram, images)


__all__ = ["GroupImage", "NetworkDram", "plan_network_dram", "relocate"]
