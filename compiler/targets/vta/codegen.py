"""Code generation: from the lowered accelerator function to a program file.

The function that leaves the pass pipeline is host code around accelerator calls. Code
generation

1. lays the function's tensors out in DRAM (:class:`DramLayout`, named in ``symbols``) and gives
   every SRAM allocation a fixed place in its buffer (checking the capacity of each scope);
2. compiles the host code into closures and runs it: loops, branches and address arithmetic
   execute on the host, DMA calls become LOAD/STORE instructions (split to the fields' limits),
   dependency calls become the push/pop flags, and each micro-op kernel is built once per
   distinct value of the host variables it uses (its signature, as in VTA's runtime) and then
   issued as a GEMM or ALU instruction, the stream builder caching kernels in the uop buffer;
3. closes the stream (the final token exchange and FINISH), assembles the program and runs the
   static checker on it.

Example:
    >>> import isa
    >>> from compiler.ir import PrimFunc, NOP
    >>> prog = generate_program(isa.load_config("default"), PrimFunc("f", (), NOP))
    >>> [i.opcode.name for i in prog.instructions()][-1]
    'FINISH'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from compiler.arith.linear import to_linear
from compiler.ir.buffer import GLOBAL, Buffer, Scope
from compiler.ir.expr import BufferLoad, Call, Expr, IntImm, Var
from compiler.ir.functor import free_vars, var_set
from compiler.ir.printer import to_text
from compiler.ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    If,
    LetStmt,
    Pragma,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from isa import HwConfig, Insn, MemType, Program

from . import dma
from .calls import (
    DEP_POP,
    DEP_PUSH,
    MODULE_NAME,
    STORE_OP,
    UopKind,
    address_load,
    dep_args,
    is_uop,
    load_memory_type,
    uop_operands,
    vta_call,
)
from .check import check_program
from .dram import DramLayout
from .errors import VTATargetError
from .host import Env, compile_expr, compile_exprs
from .intrin import make_scopes
from .passes.coproc import COPROC_SCOPE
from .passes.fold_uop import UOP_KERNEL, UopKernelInfo
from .stream import StreamBuilder

Run = Callable[[Env], None]


def scope_lanes(cfg: HwConfig) -> dict[Scope, int]:
    """Scalars per SRAM entry of each scope of ``cfg``."""
    sram = make_scopes(cfg)
    return {
        sram.inp: cfg.batch * cfg.block_in,
        sram.wgt: cfg.block_out * cfg.block_in,
        sram.acc: cfg.batch * cfg.block_out,
    }


@dataclass
class SramPlan:
    """Where every SRAM allocation lives (first entry) and how full each buffer is."""

    base: dict[Buffer, int] = field(default_factory=dict)
    used: dict[Scope, int] = field(default_factory=dict)
    owners: dict[Scope, list[str]] = field(default_factory=dict)


def plan_sram(cfg: HwConfig, func: PrimFunc) -> SramPlan:
    """Give each allocation in an SRAM scope its own entries; raise if a buffer overflows.

    Allocations stay where they are for the whole run (nested allocations are live together),
    and virtual-thread copies are already part of an allocation's size.
    """
    lanes = scope_lanes(cfg)
    sram = make_scopes(cfg)
    depth = {sram.inp: cfg.inp_depth, sram.wgt: cfg.wgt_depth, sram.acc: cfg.acc_depth}
    plan = SramPlan()

    def walk(s: Stmt) -> None:
        if isinstance(s, Allocate):
            buf = s.buffer
            scope = buf.scope
            if sram.owns(scope) and buf not in plan.base:
                n = lanes[scope]
                if buf.size % n:
                    raise VTATargetError(
                        f"stage {buf.name}: buffer {buf.name} holds {buf.size} values, not a whole "
                        f"number of {scope.name} entries of {n}"
                    )
                entries = buf.size // n
                used = plan.used.get(scope, 0)
                if used + entries > depth[scope]:
                    others = ", ".join(plan.owners.get(scope, [])) or "nothing else"
                    raise VTATargetError(
                        f"stage {buf.name}: buffer {buf.name} needs {entries} entries of "
                        f"{scope.name} "
                        f"but {depth[scope] - used} of its {depth[scope]} are free (already "
                        f"allocated: {others}); use smaller tiles or fewer virtual threads"
                    )
                plan.base[buf] = used
                plan.used[scope] = used + entries
                plan.owners.setdefault(scope, []).append(f"{buf.name} ({entries})")
            elif scope is GLOBAL:
                raise VTATargetError(
                    f"stage {buf.name}: intermediate tensors in main memory are not supported on "
                    "the accelerator; keep it in an SRAM scope or inline it"
                )
            walk(s.body)
            return
        for child in s.children():
            if isinstance(child, Stmt):
                walk(child)

    walk(func.body)
    return plan


class _Generator:
    def __init__(self, cfg: HwConfig, func: PrimFunc, layout: DramLayout,
                 names: Mapping[Buffer, str]) -> None:  # fmt: skip
        self.cfg = cfg
        self.func = func
        self.layout = layout
        self.names = dict(names)
        self.plan = plan_sram(cfg, func)
        self.lanes = scope_lanes(cfg)
        self.builder = StreamBuilder(cfg, uop_dram_base=layout.uop_dram_base())

    # ---- addresses --------------------------------------------------------------------------
    def sram_address(self, load: BufferLoad, scope: Scope | None = None) -> Callable[[Env], int]:
        idx, entry = compile_expr(load.indices[0]), self.sram_entry(load, scope)
        return lambda env: entry(idx(env))

    def sram_entry(self, load: BufferLoad, scope: Scope | None = None) -> Callable[[int], int]:
        """The SRAM entry of ``load``'s flat index (which must start an entry)."""
        buf = load.buffer
        if buf not in self.plan.base:
            raise VTATargetError(f"{buf.name} is not an SRAM allocation ({buf.scope.name})")
        if scope is not None and buf.scope is not scope:
            raise VTATargetError(f"{buf.name} is in {buf.scope.name}, expected {scope.name}")
        base, lanes = self.plan.base[buf], self.lanes[buf.scope]
        name = buf.name

        def entry(flat: int) -> int:
            if flat % lanes:
                raise VTATargetError(
                    f"{name}[{flat}] is not the start of an SRAM entry of {lanes} values"
                )
            return base + flat // lanes

        return entry

    def dram_element(self, load: BufferLoad, mem: MemType) -> Callable[[int], int]:
        """The DRAM element of ``load``'s flat index (which must start an element)."""
        buf = load.buffer
        name = self.names.get(buf)
        if name is None:
            raise VTATargetError(f"{buf.name} is not a tensor in main memory")
        base = self.layout.elem_base(name, mem)
        lanes = self.cfg.mem_elem_bytes(mem) // buf.dtype.bytes

        def element(flat: int) -> int:
            if flat % lanes:
                raise VTATargetError(
                    f"{name}[{flat}] is not the start of a {mem.name} element of {lanes} values"
                )
            return base + flat // lanes

        return element

    # ---- statements -------------------------------------------------------------------------
    def compile(self, s: Stmt) -> Run:
        if isinstance(s, SeqStmt):
            parts = [self.compile(x) for x in s.stmts]

            def run_seq(env: Env) -> None:
                for p in parts:
                    p(env)

            return run_seq
        if isinstance(s, For):
            lo, ext, body, var = (
                compile_expr(s.min),
                compile_expr(s.extent),
                self.compile(s.body),
                s.var,
            )

            probes = _stepping_probes(s)
            if probes is None:

                def run_for(env: Env) -> None:
                    start = lo(env)
                    for i in range(start, start + ext(env)):
                        env[var] = i
                        body(env)

                return run_for

            return self._repeated(var, lo, ext, body, probes)
        if isinstance(s, If):
            cond, then = compile_expr(s.cond), self.compile(s.then_body)
            other = self.compile(s.else_body) if s.else_body is not None else None

            def run_if(env: Env) -> None:
                if cond(env):
                    then(env)
                elif other is not None:
                    other(env)

            return run_if
        if isinstance(s, LetStmt):
            value, body, var = compile_expr(s.value), self.compile(s.body), s.var

            def run_let(env: Env) -> None:
                env[var] = value(env)
                body(env)

            return run_let
        if isinstance(s, Allocate):
            return self.compile(s.body)
        if isinstance(s, Pragma):
            if s.key is COPROC_SCOPE:
                return self.compile(s.body)
            if s.key is UOP_KERNEL:
                return self.kernel(s)
            raise VTATargetError(f"pragma {s.key!r} was not lowered for the accelerator")
        call = vta_call(s)
        if call is not None:
            return self.call(call)
        if isinstance(s, Evaluate):
            return lambda env: None
        if isinstance(s, BufferStore):
            raise VTATargetError(
                f"the host would compute {to_text(s)}; on the accelerator every stage must be a "
                "DMA copy, a tensorized GEMM or an ALU operation"
            )
        raise VTATargetError(f"cannot generate code for {type(s).__name__}")

    def _repeated(self, var: Var, lo: Callable[[Env], int], ext: Callable[[Env], int], body: Run,
                  probes: list[_Probe]) -> Run:  # fmt: skip
        """A loop whose iterations may be issued from the difference of two
        (:func:`_stepping_probes`): over each run of iterations where every probe keeps its
        value, iterations are issued one by one (three at most) until two in a row start in
        the builder state the second ends in, and the builder repeats the rest."""
        b = self.builder
        compiled = [
            (compile_expr(p.atom), [(f.var, compile_expr(f.min), compile_expr(f.extent))
                                    for f in p.loops])
            for p in probes
        ]  # fmt: skip

        def value(env: Env, i: int) -> tuple[int, ...]:
            """Every probe at ``i``, over the loops they read (their ranges fixed outside)."""
            scope = dict(env)
            scope[var] = i
            out: list[int] = []
            for fn, loops in compiled:
                points: list[dict[Var, int]] = [scope]
                for v, lo_fn, ext_fn in loops:
                    first = lo_fn(scope)
                    points = [{**p, v: x} for p in points
                              for x in range(first, first + ext_fn(scope))]  # fmt: skip
                out.extend(fn(p) for p in points)
            return tuple(out)

        def segments(env: Env, start: int, stop: int) -> list[tuple[int, int]] | None:
            """The runs of iterations over which every probe keeps its value; None when
            finding them would cost more than issuing the loop one iteration at a time."""
            if not compiled:
                return [(start, stop)]
            points = 0
            for _, loops in compiled:
                n = 1
                for _, _, ext_fn in loops:
                    n *= max(ext_fn(env), 0)
                points += n
            if points * (stop - start) > PROBE_EVALUATIONS:
                return None
            try:
                cuts, last = [start], value(env, start)
                for i in range(start + 1, stop):
                    now = value(env, i)
                    if now != last:
                        cuts.append(i)
                        last = now
            except ArithmeticError:  # a probe evaluated where the body would not evaluate it
                return None
            return list(zip(cuts, [*cuts[1:], stop], strict=True))

        def plain(env: Env, start: int, stop: int) -> None:
            for i in range(start, stop):
                env[var] = i
                body(env)

        def run_repeated(env: Env) -> None:
            start = lo(env)
            stop = start + ext(env)
            if stop - start < REPEAT_MIN_ITERATIONS:
                plain(env, start, stop)
                return
            runs = segments(env, start, stop)
            if runs is None:
                plain(env, start, stop)
                return
            for s0, s1 in runs:
                if s1 - s0 < REPEAT_MIN_ITERATIONS:
                    plain(env, s0, s1)
                    continue
                # issue iterations one by one until two in a row start in the state the second
                # ends in (often the first two: then the rest repeats the difference)
                pos, state = len(b.insns), b.state()
                before: tuple[int, Any, Any] | None = None  # the previous iteration's
                k = s0
                while k < s1:
                    plain(env, k, k + 1)
                    k += 1
                    now = (pos, state, b.insns[-1])
                    pos, state = len(b.insns), b.state()
                    if before is not None and before[1] == now[1] == state:
                        first, second, last_issued = before[0], now[0], before[2]
                        rest = s1 - k
                        if (
                            (second - first) * rest >= REPEAT_MIN_ITEMS
                            and isinstance(last_issued, Insn)
                            and b.repeat(first, second, last_issued, rest)
                        ):
                            env[var] = s1 - 1
                        else:
                            plain(env, k, s1)
                        break
                    if k - s0 >= REPEAT_TRIES:
                        plain(env, k, s1)
                        break
                    before = now

        return run_repeated

    def call(self, call: Call) -> Run:
        b = self.builder
        if call.op in (DEP_PUSH, DEP_POP):
            src, dst = (MODULE_NAME[v] for v in dep_args(call))
            # the modules checked and the flag chosen here, once
            if call.op == DEP_PUSH:
                push, flag = b.push_flag, b.push_flag_for(src, dst)
                return lambda env: push(src, flag)
            pop, flag = b.pop_flag, b.pop_flag_for(src, dst)
            return lambda env: pop(dst, flag)
        mem = load_memory_type(call)
        lim = dma.dma_limits(self.cfg)
        if mem is not None:
            to_load, from_load = address_load(call.args[0]), address_load(call.args[1])
            sram, dram = self.sram_entry(to_load), self.dram_element(from_load, mem)
            # both addresses, the sizes, stride and padding in one call (a program issues
            # thousands of loads)
            operands = compile_exprs([to_load.indices[0], from_load.indices[0], *call.args[2:]])

            issue = dma.loader(b, mem, lim)

            def run_load(env: Env) -> None:
                s, d, y_ext, x_ext, stride, p0, p1, p2, p3 = operands(env)
                issue(sram(s), dram(d), y_ext, x_ext, stride, p0, p1, p2, p3)

            return run_load
        if call.op == STORE_OP:
            from_acc, to_out = address_load(call.args[0]), address_load(call.args[1])
            sram = self.sram_entry(from_acc, make_scopes(self.cfg).acc)
            dram = self.dram_element(to_out, MemType.OUT)
            operands = compile_exprs([from_acc.indices[0], to_out.indices[0], *call.args[2:]])

            def run_store(env: Env) -> None:
                s, d, y_ext, x_ext, stride = operands(env)
                dma.store_2d(b, sram(s), dram(d), y_ext=y_ext, x_ext=x_ext, x_stride=stride,
                             lim=lim)  # fmt: skip

            return run_store
        if is_uop(call):
            raise VTATargetError(f"micro-op {call.op.name} outside a micro-op kernel")
        raise VTATargetError(f"unknown accelerator call {call.op.name}")

    # ---- micro-op kernels ---------------------------------------------------------------------
    def kernel(self, s: Pragma) -> Run:
        info = s.value
        assert isinstance(info, UopKernelInfo)
        folded = {v for vs in info.folded for v in vs}
        inner: Stmt = s.body
        while isinstance(inner, For) and inner.var in folded:
            inner = inner.body
        sig_vars = sorted(free_vars(inner) - folded, key=lambda v: v.uid)
        gen = self.uop_generator(inner)
        cache: dict[tuple[int, ...], object] = {}
        b = self.builder
        sig = info.signature
        zero = dict.fromkeys(folded, 0)

        signature = _getter(sig_vars)

        def run_kernel(env: Env) -> None:
            key = signature(env)
            kern = cache.get(key)
            if kern is None:
                uops: list[tuple[int, int, int]] = []
                gen({**env, **zero}, uops)
                if not uops:
                    return
                kern = b.uop_kernel(uops, info.loops)
                cache[key] = kern
            if sig.kind is UopKind.GEMM:
                b.gemm(kern)  # type: ignore[arg-type]
            elif sig.kind is UopKind.GEMM_RESET:
                b.gemm(kern, reset=True)  # type: ignore[arg-type]
            else:
                assert sig.alu is not None
                b.alu(kern, sig.alu, imm=sig.imm if sig.use_imm else None)  # type: ignore[arg-type]

        return run_kernel

    def uop_generator(self, s: Stmt) -> Callable[[Env, list], None]:
        if isinstance(s, SeqStmt):
            parts = [self.uop_generator(x) for x in s.stmts]

            def gen_seq(env: Env, out: list) -> None:
                for p in parts:
                    p(env, out)

            return gen_seq
        if isinstance(s, For):
            lo, ext, var = compile_expr(s.min), compile_expr(s.extent), s.var
            body = self.uop_generator(s.body)

            def gen_for(env: Env, out: list) -> None:
                start = lo(env)
                for i in range(start, start + ext(env)):
                    env[var] = i
                    body(env, out)

            return gen_for
        if isinstance(s, If):
            cond, then = compile_expr(s.cond), self.uop_generator(s.then_body)
            other = self.uop_generator(s.else_body) if s.else_body is not None else None

            def gen_if(env: Env, out: list) -> None:
                if cond(env):
                    then(env, out)
                elif other is not None:
                    other(env, out)

            return gen_if
        if isinstance(s, LetStmt):
            value, body, var = compile_expr(s.value), self.uop_generator(s.body), s.var

            def gen_let(env: Env, out: list) -> None:
                env[var] = value(env)
                body(env, out)

            return gen_let
        call = vta_call(s)
        if call is None or not is_uop(call):
            raise VTATargetError(f"a micro-op kernel contains {to_text(s)}")
        addrs = [self.sram_address(load) for load in uop_operands(call)]
        while len(addrs) < 3:
            addrs.append(lambda env: 0)
        a0, a1, a2 = addrs

        def gen_uop(env: Env, out: list) -> None:
            out.append((a0(env), a1(env), a2(env)))

        return gen_uop

    def run(self) -> Program:
        self.compile(self.func.body)({})
        prog = self.layout.finalize(self.builder.finish())
        check_program(prog)
        return prog


def generate_program(
    cfg: HwConfig,
    func: PrimFunc,
    *,
    layouts: Mapping[str, str] | None = None,
    roles: Mapping[str, str] | None = None,
) -> Program:
    """The program of a lowered accelerator function; its tensors are zero until written
    (``Program.write``). ``layouts``/``roles`` annotate the symbols by tensor name."""
    layout = DramLayout(cfg)
    names: dict[Buffer, str] = {}
    args = func.args or ()
    for k, buf in enumerate(func.params):
        info = args[k] if k < len(args) else None
        name = info.name if info else buf.name
        shape = tuple(info.shape) if info else tuple(_dims(buf))
        role = (roles or {}).get(name) or ("output" if info and info.is_output else "input")
        layout.alloc(name, shape, buf.dtype.name, layout=(layouts or {}).get(name, ""), role=role)
        names[buf] = name
    return _Generator(cfg, func, layout, names).run()


#: Loops shorter than this run every iteration (three run to find the pattern of the rest),
#: and so do those whose remaining iterations would issue fewer items than the second: the
#: comparison costs about as much as issuing that many instructions one by one.
REPEAT_MIN_ITERATIONS = 5
REPEAT_MIN_ITEMS = 32
#: How many iterations are issued one by one, at most, looking for two that repeat.
REPEAT_TRIES = 3
#: The most probe values evaluated to cut one loop into runs (beyond, it runs one by one).
PROBE_EVALUATIONS = 20_000


@dataclass(frozen=True)
class _Probe:
    """A part of a loop body's expressions that is not affine in the loop variable
    (``max(1 - i, 0)``, a condition on ``i``), over the inner ``loops`` whose variables it
    reads (their ranges do not depend on anything bound in the body)."""

    atom: Expr
    loops: tuple[For, ...] = ()


def _stepping_probes(loop: For) -> list[_Probe] | None:
    """Whether ``loop``'s iterations may be issued from the difference of two, and on what.

    They may when, wherever the probes returned keep their values, every iteration issues the
    same calls with the same decisions and every DMA address is an affine function of the loop
    variable: sizes, strides, paddings, conditions, inner loop ranges and micro-op kernels use
    the variable only through probes, and addresses through ``coeff * var`` terms and probes
    (a ``let`` of an affine expression steps the same way). None when they may not: a part
    that is not affine reads a variable bound inside the body (other than a loop with fixed
    range), or a kernel changes with the variable. The builder then issues the iterations of
    each such run after the first two or three from the difference of two
    (:meth:`StreamBuilder.repeat`).

    Example:
        >>> from compiler.ir import Evaluate, For, ForKind, If, IntImm, Var
        >>> i, nop = Var("i"), Evaluate(IntImm(0))
        >>> _stepping_probes(For(i, IntImm(0), IntImm(8), ForKind.SERIAL, nop))
        []
        >>> probes = _stepping_probes(For(i, IntImm(0), IntImm(8), ForKind.SERIAL, If(i < 1, nop)))
        >>> [to_text(p.atom) for p in probes]
        ['i < 1']
    """
    stepping = {loop.var}
    bound: set[Var] = set()  # bound inside the body
    fixed: dict[Var, For] = {}  # inner loops whose range is fixed when the loop starts
    probes: dict[Expr, _Probe] = {}

    def uses(node: object) -> bool:
        return not stepping.isdisjoint(var_set(node))  # type: ignore[arg-type]

    def probe(atom: Expr) -> bool:
        if atom in probes:
            return True
        inner = var_set(atom) & bound
        if stepping & var_set(atom) - {loop.var} or not inner <= fixed.keys():
            return False
        probes[atom] = _Probe(atom, tuple(fixed[v] for v in sorted(inner, key=lambda v: v.uid)))
        return True

    def affine(e: Expr) -> bool:
        """``e`` steps by a constant where the probes keep their values."""
        if not uses(e):
            return True
        return all(atom in stepping or not uses(atom) or probe(atom) for atom in to_linear(e).terms)

    def steady(e: Expr) -> bool:
        """``e`` is constant where the probes keep their values."""
        if not uses(e):
            return True
        return all(
            atom not in stepping and (not uses(atom) or probe(atom)) for atom in to_linear(e).terms
        )

    def walk(st: Stmt) -> bool:
        if isinstance(st, SeqStmt):
            return all(walk(x) for x in st.stmts)
        if isinstance(st, For):
            if not (steady(st.min) and steady(st.extent)):
                return False
            if not (var_set(st.min) | var_set(st.extent)) & (bound | stepping):
                fixed[st.var] = st
            bound.add(st.var)
            return walk(st.body)
        if isinstance(st, If):
            return (
                steady(st.cond)
                and walk(st.then_body)
                and (st.else_body is None or walk(st.else_body))
            )
        if isinstance(st, LetStmt):
            if uses(st.value):
                if not affine(st.value):
                    return False
                stepping.add(st.var)
            bound.add(st.var)
            return walk(st.body)
        if isinstance(st, Allocate):
            return walk(st.body)
        if isinstance(st, Pragma):
            if st.key is UOP_KERNEL:  # the same kernels in every iteration
                return not uses(st.body)
            return st.key is COPROC_SCOPE and walk(st.body)
        call = vta_call(st)
        if call is not None:
            if call.op in (DEP_PUSH, DEP_POP):
                return True
            if load_memory_type(call) is None and call.op != STORE_OP:
                return False
            addresses = [address_load(a).indices[0] for a in call.args[:2]]
            return all(affine(a) for a in addresses) and all(steady(a) for a in call.args[2:])
        return isinstance(st, Evaluate)

    return list(probes.values()) if walk(loop.body) else None


def _getter(keys: list[Var]) -> Callable[[Env], tuple[int, ...]]:
    """The values of ``keys`` in an environment as a tuple (one C call, not a generator)."""
    if not keys:
        return lambda env: ()
    if len(keys) == 1:
        (key,) = keys
        return lambda env: (env[key],)
    return itemgetter(*keys)


def _dims(buf: Buffer) -> list[int]:
    return [d.value if isinstance(d, IntImm) else 0 for d in buf.shape]


__all__ = ["SramPlan", "generate_program", "plan_sram", "scope_lanes"]
