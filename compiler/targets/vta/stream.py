"""Building one instruction stream for the accelerator: the target's runtime layer.

The lowered loop IR of an accelerator function is evaluated on the host; its DMA, micro-op and
synchronisation intrinsics call this builder, which produces the instruction stream the way
VTA's runtime does:

- ``dep_pop(src, dst)`` does not emit anything: it marks a pending pop on module ``dst`` that
  the next instruction of that module carries (a second pending pop of the same kind first
  commits the first as a NOP);
- ``dep_push(src, dst)`` sets the push flag on the last instruction of the stream when that
  instruction belongs to ``src`` and the flag is free, and otherwise appends a NOP on ``src``;
- micro-op kernels are cached in the uop buffer (a ring with eviction): a kernel already
  resident costs nothing, a new one costs a LOAD UOP on compute; when no kernel was evicted,
  one LOAD UOP at the start of the stream loads them all instead;
- ``finish()`` closes the stream with a compute NOP that waits for the last load and the last
  store, then FINISH.

Example:
    >>> from isa import load_config
    >>> b = StreamBuilder(load_config("default"))
    >>> k = b.uop_kernel([(0, 0, 0)], loops=[(4, 1, 1, 0)])
    >>> b.gemm(k)
    >>> [i.opcode.name for i in b.finish().insns]
    ['LOAD', 'GEMM', 'STORE', 'LOAD', 'LOAD', 'FINISH']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from isa import Alu, AluOp, Finish, Gemm, HwConfig, Insn, InsnBlock, Load, MemType, Store
from isa.encoding import all_field_names, fields_of
from isa.insn import DEP_FLAGS, module_of

from .errors import VTATargetError

MODULE_ORDER = {"load": 1, "compute": 2, "store": 3}


class LoopFactors(TypedDict):
    """The loop factor fields of a GEMM/ALU instruction (``UopKernel.factors``)."""

    dst_factor_out: int
    dst_factor_in: int
    src_factor_out: int
    src_factor_in: int
    wgt_factor_out: int
    wgt_factor_in: int


@dataclasses.dataclass(frozen=True)
class UopKernel:
    """A micro-op kernel: its micro-ops and up to two loops folded into the instruction.

    ``loops`` lists ``(extent, dst_factor, src_factor, wgt_factor)``, outer first; they become
    ``iter_out``/``iter_in`` and the factor fields. Kernels are values: equal kernels share one
    place in the uop buffer.
    """

    uops: tuple[tuple[int, int, int], ...]
    loops: tuple[tuple[int, int, int, int], ...] = ()

    def __post_init__(self) -> None:
        if len(self.loops) > 2:
            raise VTATargetError(f"a micro-op kernel folds at most 2 loops, got {len(self.loops)}")
        if not self.uops:
            raise VTATargetError("a micro-op kernel needs at least one micro-op")
        # the builder looks a kernel up for every GEMM and ALU instruction: hash it once
        object.__setattr__(self, "_hash", hash((self.uops, self.loops)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    @property
    def iters(self) -> tuple[int, int]:
        ext = [lp[0] for lp in self.loops]
        return (ext[0], ext[1]) if len(ext) == 2 else (1, ext[0]) if ext else (1, 1)

    def factors(self) -> LoopFactors:
        """The loop factor fields of a GEMM/ALU instruction running this kernel."""
        loops = list(self.loops)
        if len(loops) == 1:
            loops = [(1, 0, 0, 0)] + loops
        while len(loops) < 2:
            loops.append((1, 0, 0, 0))
        (_, d0, s0, w0), (_, d1, s1, w1) = loops
        return {
            "dst_factor_out": d0,
            "dst_factor_in": d1,
            "src_factor_out": s0,
            "src_factor_in": s1,
            "wgt_factor_out": w0,
            "wgt_factor_in": w1,
        }

    @property
    def uop_count(self) -> int:
        io, ii = self.iters
        return io * ii * len(self.uops)


@dataclasses.dataclass
class _Resident:
    begin: int
    end: int


#: The columns of :class:`~isa.InsnBlock` fields that are decisions, never addresses: a loop's
#: iterations that repeat one pattern of instructions issue them with the same values
#: (:meth:`StreamBuilder.repeat`).
_FIELD_COLUMN = {name: k for k, name in enumerate(all_field_names())}
_DECISION_COLUMNS = np.asarray(
    [
        _FIELD_COLUMN[f]
        for f in ("opcode", "memory_type", "alu_opcode", "use_imm", "reset", *DEP_FLAGS)
    ]  # fmt: skip
)


@dataclasses.dataclass
class Stream:
    """A finished stream: instructions (runs of a repeated loop body as
    :class:`~isa.InsnBlock`) and the micro-op words they load from DRAM."""

    insns: list[Insn | InsnBlock]
    uop_words: np.ndarray  # uint32, placed in DRAM at the builder's uop_dram_base (elements)
    uop_dram_base: int


def _with_flags(insn: Insn, flags: Sequence[str]) -> Insn:
    """``insn`` with every dependency flag in ``flags`` set."""
    for flag in flags:
        insn = _with_flag(insn, flag)
    return insn


def _with_flag(insn: Insn, flag: str) -> Insn:
    """``insn`` with dependency ``flag`` set: ``dataclasses.replace`` without running the
    constructor over every field again (an instruction's fields are plain values that no
    ``__post_init__`` checks, and nearly every instruction gets a push this way)."""
    new = object.__new__(type(insn))
    new.__dict__.update(insn.__dict__)
    new.__dict__[flag] = True
    return new


class StreamBuilder:
    """Accumulates instructions for one program; see the module docstring."""

    def __init__(self, cfg: HwConfig, *, uop_dram_base: int = 0):
        self.cfg = cfg
        # the last item is always an instruction object (a dependency push may flag it)
        self.insns: list[Insn | InsnBlock] = []
        self._pending: dict[str, dict[str, bool]] = {
            m: {"pop_prev_dep": False, "pop_next_dep": False} for m in MODULE_ORDER
        }
        # uop kernels: DRAM copy (deduplicated) and residency in the uop buffer ring
        self.uop_dram_base = uop_dram_base
        self._uop_words: list[int] = []
        self._dram_pos: dict[UopKernel, int] = {}
        self._resident: dict[UopKernel, _Resident] = {}
        self._ring_end = 0
        from isa.formats import layout

        self._uop_layout = layout("uop", cfg)
        self.uop_loads = 0
        # where each kernel's LOAD UOP sits in the stream, and whether every kernel went to the
        # uop buffer entry of its DRAM position with nothing evicted (then one LOAD UOP at the
        # start of the stream can load them all: :meth:`finish`)
        self._kernel_loads: list[int] = []
        self._in_place = True
        self._loads: dict[tuple[Any, ...], Load] = {}
        self._gemms: dict[tuple[Any, ...], Gemm] = {}

    # ---- dependency tokens ------------------------------------------------------------
    def dep_pop(self, src: str, dst: str) -> None:
        """The next instruction of module ``dst`` waits for a token from ``src``."""
        self.pop_flag(dst, self.pop_flag_for(src, dst))

    def dep_push(self, src: str, dst: str) -> None:
        """Module ``src`` signals ``dst`` once everything it has been given so far is done."""
        self.push_flag(src, self.push_flag_for(src, dst))

    def push_flag(self, src: str, flag: str) -> None:
        """:meth:`dep_push` with its flag worked out (a code generator that pushes the same
        token many times checks the modules once)."""
        self._commit_pending(src)
        insns = self.insns
        last = insns[-1] if insns else None
        if last is not None and module_of(last) == src and not getattr(last, flag):  # type: ignore[arg-type]
            insns[-1] = _with_flag(last, flag)  # type: ignore[arg-type]
        else:
            self._nop(src, **{flag: True})

    def pop_flag(self, dst: str, flag: str) -> None:
        """:meth:`dep_pop` with its flag worked out."""
        pending = self._pending[dst]
        if pending[flag]:
            self._nop(dst)
        pending[flag] = True

    def pop_flag_for(self, src: str, dst: str) -> str:
        """The flag by which ``dst``'s instruction pops a token from ``src`` (the pair checked)."""
        self._check_pair(src, dst)
        return "pop_prev_dep" if MODULE_ORDER[src] < MODULE_ORDER[dst] else "pop_next_dep"

    def push_flag_for(self, src: str, dst: str) -> str:
        """The flag by which ``src``'s instruction pushes a token to ``dst`` (the pair checked)."""
        self._check_pair(src, dst)
        return "push_next_dep" if MODULE_ORDER[src] < MODULE_ORDER[dst] else "push_prev_dep"

    @staticmethod
    def _check_pair(src: str, dst: str) -> None:
        if src not in MODULE_ORDER or dst not in MODULE_ORDER:
            raise VTATargetError(f"unknown module in dependency {src}->{dst}")
        if abs(MODULE_ORDER[src] - MODULE_ORDER[dst]) != 1:
            raise VTATargetError(
                f"no dependency queue {src}->{dst}: tokens flow only between neighbouring "
                "modules (load<->compute, compute<->store)"
            )

    def _commit_pending(self, module: str) -> None:
        pending = self._pending[module]
        if pending["pop_prev_dep"] or pending["pop_next_dep"]:
            self._nop(module)

    def _nop(self, module: str, **flags: bool) -> None:
        if module == "load":
            insn: Insn = Load(memory_type=MemType.INP, x_size=0)
        elif module == "compute":
            insn = Load(memory_type=MemType.UOP, x_size=0)
        else:
            insn = Store(x_size=0)
        self._emit(insn, **flags)

    def _emit(self, insn: Insn, *, keep_pending: bool = False, **flags: bool) -> None:
        """Append ``insn``; it takes the module's pending pops unless ``keep_pending``."""
        fields = dict(flags)
        if not keep_pending:
            fields = {**self._take_pending(module_of(insn)), **flags}
        self.insns.append(dataclasses.replace(insn, **fields) if fields else insn)

    def _take_pending(self, module: str) -> dict[str, Any]:
        """The module's pending pops as flags of its next instruction (then none is pending):
        the instructions issued most often are built with them at once, not copied."""
        pending = self._pending[module]
        prev, nxt = pending["pop_prev_dep"], pending["pop_next_dep"]
        if not (prev or nxt):
            return {}
        pending["pop_prev_dep"] = pending["pop_next_dep"] = False
        flags = {}
        if prev:
            flags["pop_prev_dep"] = True
        if nxt:
            flags["pop_next_dep"] = True
        return flags

    # ---- DMA ------------------------------------------------------------------------
    def load(
        self,
        memory_type: MemType,
        sram_base: int,
        dram_base: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        pad: tuple[int, int, int, int] = (0, 0, 0, 0),
    ) -> None:
        """A 2-D load; ``pad`` is (y_pad_0, y_pad_1, x_pad_0, x_pad_1). Splits rows past the
        ``y_size`` field and pads past the pad fields are the caller's business
        (:mod:`compiler.targets.vta.dma`)."""
        module = "load" if memory_type in (MemType.INP, MemType.WGT) else "compute"
        flags = self._take_pending(module)
        # instructions are immutable values and a loop nest issues the same LOAD many times
        # (a tile reloaded for each step of an outer loop): each distinct one is built once
        key = (memory_type, sram_base, dram_base, y_size, x_size, x_stride, pad, *flags)
        insn = self._loads.get(key)
        if insn is None:
            y0, y1, x0, x1 = pad
            insn = self._loads[key] = Load(
                memory_type=memory_type,
                sram_base=sram_base,
                dram_base=dram_base,
                y_size=y_size,
                x_size=x_size,
                x_stride=x_stride,
                y_pad_0=y0,
                y_pad_1=y1,
                x_pad_0=x0,
                x_pad_1=x1,
                **flags,
            )
        self.insns.append(insn)

    def store(
        self, sram_base: int, dram_base: int, y_size: int, x_size: int, x_stride: int
    ) -> None:
        """A 2-D store of out-buffer entries to DRAM."""
        self.insns.append(
            Store(
                sram_base=sram_base,
                dram_base=dram_base,
                y_size=y_size,
                x_size=x_size,
                x_stride=x_stride,
                **self._take_pending("store"),
            )
        )

    # ---- micro-op kernels -------------------------------------------------------------
    def uop_kernel(
        self, uops: Sequence[tuple[int, int, int]], loops: Sequence[tuple[int, int, int, int]] = ()
    ) -> UopKernel:
        """Declare a kernel (it is loaded into the uop buffer when first used)."""
        return UopKernel(
            tuple((int(dst), int(src), int(wgt)) for dst, src, wgt in uops),
            tuple((int(n), int(dst), int(src), int(wgt)) for n, dst, src, wgt in loops),
        )

    def _make_resident(self, kernel: UopKernel) -> _Resident:
        res = self._resident.get(kernel)
        if res is not None:
            return res
        n = len(kernel.uops)
        depth = self.cfg.uop_depth
        if n > depth:
            raise VTATargetError(
                f"micro-op kernel of {n} micro-ops does not fit the uop buffer ({depth})"
            )
        begin = self._ring_end
        if begin + n > depth:
            begin = 0
        end = begin + n
        # evict every cached kernel that overlaps the new range
        for k, r in list(self._resident.items()):
            if r.begin < end and begin < r.end:
                del self._resident[k]
                self._in_place = False
        pos = self._dram_pos.get(kernel)
        if pos is None:
            pos = len(self._uop_words)
            self._dram_pos[kernel] = pos
            from isa import encode_uops

            self._uop_words.extend(int(w) for w in encode_uops(np.asarray(kernel.uops), self.cfg))
        self._in_place &= begin == pos
        self._kernel_loads.append(len(self.insns))
        # a kernel's LOAD UOP leaves the pending pops to the GEMM or ALU instruction after it:
        # the uop buffer is compute's alone (the load module fills inp and wgt, the store reads
        # out), so the micro-ops load while the instruction waits for its tokens
        self._emit(
            Load(
                memory_type=MemType.UOP,
                sram_base=begin,
                dram_base=self.uop_dram_base + pos,
                y_size=1,
                x_size=n,
                x_stride=n,
            ),
            keep_pending=True,
        )
        self.uop_loads += 1
        res = _Resident(begin, end)
        self._resident[kernel] = res
        self._ring_end = end
        return res

    def gemm(self, kernel: UopKernel, *, reset: bool = False) -> None:
        """A GEMM running ``kernel`` (loaded into the uop buffer first if not resident)."""
        res = self._make_resident(kernel)
        flags = self._take_pending("compute")
        # as LOADs: each distinct GEMM is built once
        key = (kernel, reset, res.begin, res.end, *flags)
        insn = self._gemms.get(key)
        if insn is None:
            io, ii = kernel.iters
            insn = self._gemms[key] = Gemm(
                reset=reset,
                uop_begin=res.begin,
                uop_end=res.end,
                iter_out=io,
                iter_in=ii,
                **kernel.factors(),
                **flags,
            )
        self.insns.append(insn)

    def alu(
        self, kernel: UopKernel, op: AluOp, *, imm: int | None = None, reset: bool = False
    ) -> None:
        """An ALU instruction running ``kernel``; ``imm`` makes it an immediate operation."""
        res = self._make_resident(kernel)
        io, ii = kernel.iters
        f = kernel.factors()
        if f["wgt_factor_out"] or f["wgt_factor_in"]:
            raise VTATargetError("ALU micro-op loops have no weight factors")
        self.insns.append(
            Alu(
                reset=reset,
                uop_begin=res.begin,
                uop_end=res.end,
                iter_out=io,
                iter_in=ii,
                alu_opcode=op,
                use_imm=imm is not None,
                imm=0 if imm is None else int(imm),
                dst_factor_out=f["dst_factor_out"],
                dst_factor_in=f["dst_factor_in"],
                src_factor_out=f["src_factor_out"],
                src_factor_in=f["src_factor_in"],
                **self._take_pending("compute"),
            )
        )

    # ---- loops that repeat a pattern ----------------------------------------------------
    def state(self) -> tuple[Any, ...]:
        """Everything besides the calls' arguments that decides what the builder issues next:
        the last instruction's module and push flags, the pending pops, the uop buffer's
        contents and how many kernels were loaded. Two points of a stream with equal states
        issue the same instructions for the same calls."""
        last = self.insns[-1] if self.insns else None
        tail = None
        if isinstance(last, Insn):
            tail = (module_of(last), last.push_prev_dep, last.push_next_dep)
        return (
            tail,
            tuple(tuple(p.values()) for p in self._pending.values()),
            self._ring_end,
            self._in_place,
            self.uop_loads,
            len(self._uop_words),
            frozenset((k, r.begin, r.end) for k, r in self._resident.items()),
        )

    def repeat(self, first: int, second: int, last_issued: Insn, count: int) -> bool:
        """Issue ``count`` more iterations of a loop body from the two just issued.

        The items from ``first`` to ``second`` are one iteration, those from ``second`` to the
        end the next, and the builder's :meth:`state` was the same before the first, before the
        second and after it (the caller checks); ``last_issued`` is the first iteration's last
        instruction as it was issued, before the second iteration's first push could flag it.
        The caller guarantees that every field of the body's instructions is an affine function
        of the loop variable and that everything else the body decides does not depend on it;
        then each further iteration is the second plus the difference between the two, and
        they are appended as one :class:`~isa.InsnBlock` (the very last instruction as an
        object). False (nothing appended) when the two iterations do not line up.
        """
        insns = self.insns
        end = len(insns)
        prev = insns[second - 1]
        if count < 1 or end <= second or not isinstance(prev, Insn):
            return False
        t = fields_of([*insns[first : second - 1], last_issued])
        u = fields_of(insns[second:end])
        n = t.shape[0]
        if n == 0 or u.shape[0] != n:
            return False
        delta = u - t
        if delta[:, _DECISION_COLUMNS].any():
            return False
        # the flags the next iteration's first push sets on an iteration's last instruction
        flagged = [f for f in DEP_FLAGS if getattr(prev, f) != getattr(last_issued, f)]
        steps = np.arange(1, count + 1, dtype=np.int64)[:, None, None]
        rows = (u[None] + steps * delta[None]).reshape(count * n, -1)
        for f in flagged:
            rows[n - 1 : -1 : n, _FIELD_COLUMN[f]] = 1
        last = InsnBlock(rows[-1:]).insn(0)
        if flagged:  # the second iteration's last instruction is followed by another now
            insns[end - 1] = _with_flags(insns[end - 1], flagged)  # type: ignore[arg-type]
        if count * n > 1:
            insns.append(InsnBlock(rows[:-1]))
        insns.append(last)
        return True

    # ---- closing ----------------------------------------------------------------------
    def finish(self) -> Stream:
        """Wait for the last load and the last store, then FINISH."""
        self.dep_push("store", "compute")
        self.dep_push("load", "compute")
        self.dep_pop("store", "compute")
        self.dep_pop("load", "compute")
        self._commit_pending("compute")
        self.insns.append(Finish())
        self._preload_uops()
        return Stream(self.insns, np.asarray(self._uop_words, np.uint32), self.uop_dram_base)

    def _preload_uops(self) -> None:
        """Load every micro-op kernel with one LOAD UOP at the start of the stream when each
        kernel sits in the uop buffer where it sits in DRAM (nothing was evicted): a kernel's
        own LOAD UOP, issued when compute first needs it, waits for the memory port behind
        the load module's and the store's transfers (they come first in the port's
        priority), where at the start the port is free. Kernel loads carry no token."""
        n = len(self._uop_words)
        if not self._in_place or len(self._kernel_loads) < 2 or n > self.cfg.uop_depth:
            return
        drop = set(self._kernel_loads)
        kept = [insn for k, insn in enumerate(self.insns) if k not in drop]
        first = Load(
            memory_type=MemType.UOP,
            sram_base=0,
            dram_base=self.uop_dram_base,
            y_size=1,
            x_size=n,
            x_stride=n,
        )
        self.insns = [first, *kept]
        self._kernel_loads = [0]
        self.uop_loads = 1
