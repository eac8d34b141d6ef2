"""What a compiled model is at run time, for every target: the kernels in order, where every
tensor lives, the constants and the arena size. The executors run a :class:`Program`
(``runtime.executor`` the cpu and gpu ones, ``runtime.vta_plan`` one with accelerator groups);
the artifact format stores one; the graph compiler (``compiler/model/cpu.py``) produces one from
an optimized graph, and :func:`compiler.model.vta_program.plan_network` from a compiled int8
network for the accelerator.

A kernel (:class:`KernelSpec`) runs on one of :data:`KERNEL_TARGETS`: ``cpu`` (compiled LLVM
IR), ``gpu`` (CUDA kernels), ``vta`` (an accelerator group: its program in the network's DRAM
image, :class:`AccelModule`; its arguments are the host tensors written into the image and its
``out`` read back) or ``copy`` (a concat or slice the accelerator's DRAM plan does in place:
nothing runs).

A tensor lives in one of five places (:class:`Placement`):

* ``input``: a feed, given at ``run`` (``key`` is the model input's name);
* ``constant``: a weight bound once when the session is created (``key`` names it);
* ``arena``: a region of the one activation arena, at byte ``offset`` (the static memory plan);
* ``output``: an array allocated by each ``run`` and returned to the caller (``key`` is the
  model output's name);
* ``image``: an accelerator group's ``out`` that no host kernel reads: it stays in the DRAM
  image (``key`` is the group).

A placement whose shape differs from its base's (same element count) is a view: a reshape that
costs nothing.

Example:
    >>> spec = TensorSpec("x", (1, 3, 8, 8), "float32")
    >>> spec.type, spec.nbytes
    ('tensor(float)', 768)
    >>> Placement("arena", "conv1", 0, (1, 4, 8, 8, 1, 16), "float32").nbytes
    16384
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: ONNX's type strings (what onnxruntime's ``NodeArg.type`` prints) for the project's dtypes.
ONNX_TYPE_NAMES = {
    "float32": "tensor(float)",
    "float64": "tensor(double)",
    "int8": "tensor(int8)",
    "uint8": "tensor(uint8)",
    "int32": "tensor(int32)",
    "int64": "tensor(int64)",
    "bool": "tensor(bool)",
}

PLACEMENT_KINDS = ("input", "constant", "arena", "output", "image")
#: What a kernel runs on (the module docstring).
KERNEL_TARGETS = ("cpu", "gpu", "vta", "copy")


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as the caller sees it (like onnxruntime's ``NodeArg``).

    Example:
        >>> TensorSpec("logits", (1, 10), "float32")
        TensorSpec(name='logits', shape=(1, 10), dtype='float32')
    """

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        """ONNX's type string, e.g. ``tensor(float)``."""
        return ONNX_TYPE_NAMES.get(self.dtype, f"tensor({self.dtype})")

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TensorSpec:
        return cls(str(d["name"]), tuple(int(s) for s in d["shape"]), str(d["dtype"]))


@dataclass(frozen=True)
class Placement:
    """Where one tensor of the compiled graph lives at run time (see the module docstring)."""

    kind: str
    key: str
    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "offset": self.offset,
            "shape": list(self.shape),
            "dtype": self.dtype,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Placement:
        return cls(
            str(d["kind"]),
            str(d["key"]),
            int(d["offset"]),
            tuple(int(s) for s in d["shape"]),
            str(d["dtype"]),
        )


@dataclass(frozen=True)
class KernelArg:
    """One argument of a compiled kernel: its logical shape and dtype, and whether it is written."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    is_output: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "is_output": self.is_output,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelArg:
        return cls(
            str(d["name"]), tuple(int(s) for s in d["shape"]), str(d["dtype"]), bool(d["is_output"])
        )


@dataclass(frozen=True)
class KernelSpec:
    """One fused group, compiled: called with the tensors ``tensors`` in argument order.

    ``name`` is the group's name (its anchor node's name), ``ops`` the operators fused into it,
    ``code`` what the target needs to rebuild the kernel (for the CPU: LLVM IR text whose entry
    point is ``symbol``; the machine code itself comes from the on-disk object cache).
    """

    name: str
    ops: tuple[str, ...]
    target: str
    symbol: str
    args: tuple[KernelArg, ...]
    tensors: tuple[str, ...]
    code: str = field(repr=False)


@dataclass(frozen=True)
class MemoryStats:
    """The static memory plan's figures: the arena (peak) against one buffer per tensor (naive)."""

    peak_bytes: int
    naive_bytes: int

    @property
    def ratio(self) -> float:
        return self.peak_bytes / self.naive_bytes if self.naive_bytes else 0.0


@dataclass(frozen=True)
class HostNode:
    """One node of a host kernel of an accelerator network, for the per-layer table: its
    name, operator and partition rule, and the placement's reason where the report repeats it
    (a ``compile-failed`` node: what the compiler said), else empty."""

    name: str
    op: str
    rule: str
    reason: str = ""


@dataclass(frozen=True)
class HostKernel:
    """What the per-layer table says of a ``cpu`` kernel of an accelerator network: its nodes
    and how they ran (``host (compiled, group G)`` or ``host (reference): <reason>``)."""

    nodes: tuple[HostNode, ...]
    how: str


@dataclass(frozen=True)
class GroupFigures:
    """What an accelerator group's row of the per-layer table says before any run: its name,
    operators (``+``-joined), partition rule, MACs, ideal and roofline cycles (the GEMM core's
    peak; with the epilogue's ALU micro-ops), the bytes every input, weight and output needs
    once, and the schedule knobs its program was compiled with (``describe()``; empty for a
    group without knobs). Each run adds its cycles, DRAM bytes, limiter and energy
    (``runtime.vta_target.run_record``)."""

    name: str
    ops: str
    rule: str
    macs: int
    ideal_cycles: float
    roofline_cycles: float
    alu_roofline_cycles: float
    compulsory_bytes: int
    knobs: str = ""


@dataclass(frozen=True)
class AccelKernel:
    """A ``vta`` kernel: where its relocated program lies in the network's DRAM image
    (``compiler.targets.vta.link.GroupImage``), what its per-layer row says before any run
    (:class:`GroupFigures`) and its own program (weights written, before relocation: what an
    artifact stores as the group's program file)."""

    image: Any
    record: GroupFigures
    program: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class InPlaceCopy:
    """A ``copy`` kernel: a concat or slice that the DRAM plan does in place, and why."""

    reason: str


@dataclass(frozen=True)
class AccelModule:
    """The accelerator's part of a program whose kernels include ``vta`` ones: the config, the
    network's initial DRAM image (every relocated program, weights and tiles; activations
    zeroed), per kernel what it runs (``steps``, one per entry of ``Program.kernels``), and
    the figures and tables the reports print."""

    config: Any
    dram: np.ndarray = field(repr=False)
    steps: tuple[HostKernel | AccelKernel | InPlaceCopy, ...] = field(repr=False)
    activation_bytes: int = 0
    activation_bytes_unshared: int = 0
    #: the quantized graph's scales and requantization parameters, per node (informative)
    quantization: list[dict[str, Any]] = field(default_factory=list, repr=False)
    #: the int8 scheme, in words (:func:`compiler.model.vta.quantization_scheme`)
    scheme: str = ""
    compile_seconds: float = 0.0


@dataclass(frozen=True)
class Program:
    """A whole compiled model: run the kernels in order over the placements."""

    name: str
    target: str
    num_threads: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    placements: dict[str, Placement]
    kernels: tuple[KernelSpec, ...]
    constants: dict[str, np.ndarray] = field(repr=False)
    arena_bytes: int
    memory: MemoryStats
    graph_text: str = field(default="", repr=False)
    #: the tensor holding each model output, by output name
    output_tensors: dict[str, str] = field(default_factory=dict)
    #: compiled modules by symbol, for targets whose kernels live only in this process (the
    #: GPU: numba compiles kernel source for a device at launch); never stored in an artifact
    modules: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: the accelerator's part, for a program with ``vta`` kernels (else None)
    accel: AccelModule | None = field(default=None, repr=False)
