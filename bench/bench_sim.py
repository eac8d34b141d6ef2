"""Simulator throughput on a large GEMM program, against a plain numba loop over the same work.

The workload is a generated software-pipelined program for the ``default`` preset: ``--blocks``
blocks, each loading an input and a weight block (double-buffered, tokens in every queue),
resetting and then accumulating 16 accumulator tiles with one GEMM of 256 micro-ops ×
``iter_out`` 16 × ``iter_in`` ``--repeat``, and storing the tiles. The simulator runs it with
its functional model and timing model both on (and trace recording off, as ``vtac sim`` does
without ``--trace``).

The peer, measured in the same process, is a plain numba loop that performs the same GEMM
micro-ops (same micro-op table, same loop bounds and factors) on the same buffer shapes, with no
timing, checks or out-buffer writes. Ratios above 1 mean the simulator is faster.

Memory: the simulator's peak Python allocation (tracemalloc) and the process's peak RSS are
reported for the program at ``--repeat`` and at 4× ``--repeat`` (the same instructions, four
times the executed micro-ops); they must not grow.

With ``--resnet CONFIG [CONFIG ...]`` it measures whole networks instead: the zoo's int8
ResNet-18 at 224×224 is compiled once per config (not timed), one run of it records the
accelerator programs it simulates, and those programs are then simulated again and timed: with
the dense GEMM/ALU kernels (the default, :mod:`vta_sim.dense`) and with the reference kernels one
micro-op at a time (``kernels="reference"``, the simulator before the dense kernels), both
giving the same cycles. Reported: simulated cycles per second and MACs per second, and the
ratio of each time to a BLAS bound for the same MACs, measured in the same run: numpy float32
matmuls of a ResNet-sized shape (one BLAS thread), their time per MAC times the network's MACs
(float32 is exact for int8 products while the sums stay below 2**24).

Threads are pinned (one numba thread, one BLAS thread, one CPU); times are medians of ``--runs``
runs after a warm-up run that excludes JIT compilation. docs/speed.md records the figures, before
and after each change to the kernels, with where the time goes.

    python -m bench.bench_sim --blocks 1024 --repeat 8 --runs 5
    python -m bench.bench_sim --resnet default vta-1x16x16 --runs 3
"""

from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

import isa  # noqa: E402
import vta_sim  # noqa: E402
from isa import Finish, Gemm, Load, MemType, Program, Store  # noqa: E402
from isa.report import Column, format_table  # noqa: E402

TILES = 16  # accumulator tiles per block (dst), input tiles per block (src)
UOPS = TILES * TILES  # micro-ops per pass: every (dst, src) pair, its own weight tile
ITER_OUT = 16


def _pin_one_cpu() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"cpu {cpu}"
    return "not pinned (no sched_setaffinity)"


def gemm_program(cfg: isa.HwConfig, blocks: int, repeat: int) -> Program:
    """The benchmark program (see the module docstring)."""
    slot_inp, slot_wgt, slot_acc = cfg.inp_depth // 2, cfg.wgt_depth // 2, cfg.acc_depth // 2
    assert UOPS <= slot_wgt and ITER_OUT * TILES <= min(slot_inp, slot_acc)
    # micro-op sets for slot 0 and 1: (dst, src, wgt) = (d, s, d*TILES + s) in the slot's regions
    uops = np.array(
        [
            (slot * slot_acc + d, slot * slot_inp + s, slot * slot_wgt + d * TILES + s)
            for slot in range(2)
            for d in range(TILES)
            for s in range(TILES)
        ]
    )
    rng = np.random.default_rng(0)
    inp_rows = ITER_OUT * TILES
    inp_data = rng.integers(-128, 128, (inp_rows, cfg.inp_elem_bytes)).astype(np.int8)
    wgt_data = rng.integers(-128, 128, (UOPS, cfg.wgt_elem_bytes)).astype(np.int8)
    n_insns = 2 + 5 * blocks + 2
    inp_at = -(-n_insns * 16 // 4096) * 4096
    wgt_at = inp_at + inp_data.nbytes
    uop_at = wgt_at + wgt_data.nbytes
    out_at = uop_at + uops.shape[0] * 4
    out_bytes = slot_acc * cfg.out_elem_bytes
    insns: list[isa.Insn] = [
        Load(memory_type=MemType.UOP, dram_base=uop_at // 4, x_size=uops.shape[0])
    ]
    for b in range(blocks):
        slot = b % 2
        insns += [
            Load(
                memory_type=MemType.INP,
                sram_base=slot * slot_inp,
                dram_base=inp_at // cfg.inp_elem_bytes,
                y_size=ITER_OUT,
                x_size=TILES,
                x_stride=TILES,
                pop_next_dep=b >= 2,
            ),
            Load(
                memory_type=MemType.WGT,
                sram_base=slot * slot_wgt,
                dram_base=wgt_at // cfg.wgt_elem_bytes,
                x_size=UOPS,
                push_next_dep=True,
            ),
            Gemm(
                reset=True,
                uop_begin=slot * UOPS,
                uop_end=slot * UOPS + TILES,
                iter_out=ITER_OUT,
                dst_factor_out=TILES,
                pop_next_dep=b >= 2,
            ),
            Gemm(
                uop_begin=slot * UOPS,
                uop_end=(slot + 1) * UOPS,
                iter_out=ITER_OUT,
                iter_in=repeat,
                dst_factor_out=TILES,
                src_factor_out=TILES,
                pop_prev_dep=True,
                push_prev_dep=b + 2 < blocks,
                push_next_dep=True,
            ),
            Store(
                sram_base=slot * slot_acc,
                dram_base=out_at // cfg.out_elem_bytes,
                x_size=ITER_OUT * TILES,
                pop_prev_dep=True,
                push_prev_dep=True,
            ),
        ]
    insns += [Gemm(pop_next_dep=True) for _ in range(min(blocks, 2) - 1)]
    insns.append(Finish(pop_next_dep=True))
    data = {inp_at: inp_data, wgt_at: wgt_data, uop_at: isa.encode_uops(uops, cfg)}
    return Program.build(cfg, insns, data=data, dram_bytes=out_at + out_bytes)


@numba.njit(cache=True)
def peer_gemm(
    inp,
    wgt,
    acc,
    uop,
    begin,
    end,
    iter_out,
    iter_in,
    dst_fo,
    dst_fi,
    src_fo,
    src_fi,
    wgt_fo,
    wgt_fi,
):
    """A plain loop over the same GEMM micro-ops: acc[a] += inp[x] · wgt[w]ᵀ in int32."""
    for g in range(begin.shape[0]):
        for i in range(iter_out[g]):
            for j in range(iter_in[g]):
                da = i * dst_fo[g] + j * dst_fi[g]
                dx = i * src_fo[g] + j * src_fi[g]
                dw = i * wgt_fo[g] + j * wgt_fi[g]
                for k in range(begin[g], end[g]):
                    a = uop[k, 0] + da
                    x = uop[k, 1] + dx
                    w = uop[k, 2] + dw
                    for b in range(acc.shape[1]):
                        for o in range(acc.shape[2]):
                            s = acc[a, b, o]
                            for c in range(inp.shape[2]):
                                s += np.int32(inp[x, b, c]) * np.int32(wgt[w, o, c])
                            acc[a, b, o] = s


def peer_args(prog: Program) -> tuple:
    """The peer's inputs: the program's non-reset GEMMs and its decoded micro-op table."""
    cfg = prog.config
    f = prog.fields()
    sel = (f["opcode"] == isa.Opcode.GEMM) & (f["reset"] == 0) & (f["uop_end"] > f["uop_begin"])
    names = (
        "uop_begin",
        "uop_end",
        "iter_out",
        "iter_in",
        "dst_factor_out",
        "dst_factor_in",
        "src_factor_out",
        "src_factor_in",
        "wgt_factor_out",
        "wgt_factor_in",
    )
    loops = [np.ascontiguousarray(f[n][sel]) for n in names]
    uop_load = prog.instructions()[0]  # the program's one LOAD UOP
    at = uop_load.dram_base * 4
    words = prog.dram[at : at + 4 * uop_load.x_size].view(np.uint32)
    dst, src, wgt = isa.decode_uops(words, cfg)
    uop = np.zeros((cfg.uop_depth, 3), np.int32)
    uop[: dst.size] = np.stack([dst, src, wgt], axis=1)
    rng = np.random.default_rng(1)
    inp = rng.integers(-128, 128, (cfg.inp_depth, cfg.batch, cfg.block_in)).astype(np.int8)
    wgt_buf = rng.integers(-128, 128, (cfg.wgt_depth, cfg.block_out, cfg.block_in))
    acc = np.zeros((cfg.acc_depth, cfg.batch, cfg.block_out), np.int32)
    return (inp, wgt_buf.astype(np.int8), acc, uop, *loops)


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def memory_of(prog: Program) -> tuple[int, int]:
    """(tracemalloc peak bytes during one simulation, peak RSS in KiB after it)."""
    tracemalloc.start()
    vta_sim.simulate(prog, trace=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def resnet18_programs(config: str) -> list[Program]:
    """The accelerator programs one run of the int8 ResNet-18 (224×224) simulates on
    ``config``, in order (compiled once; the run records what it hands the simulator)."""
    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import load_zoo
    from runtime.vta_target import compile_network

    graph = from_onnx(load_zoo("resnet18", batch=1, image_size=224))
    x = np.random.default_rng(0).standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    feed = {graph.inputs[0].name: x}
    net = compile_network(graph, config, calibration=feed)
    programs: list[Program] = []
    simulate = vta_sim.simulate

    def recording(prog, **kw):
        programs.append(prog)
        return simulate(prog, **kw)

    vta_sim.simulate = recording
    try:
        net.run(feed)
    finally:
        vta_sim.simulate = simulate
    return programs


KERNELS = ("dense", "reference")


def blas_gemm():
    """A float32 BLAS GEMM of a ResNet-18 layer's shape (56×56 outputs, a 3×3×64 reduction, 64
    channels): the peer's time per MAC."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3136, 576)).astype(np.float32)
    b = rng.standard_normal((576, 64)).astype(np.float32)
    a @ b
    return lambda: a @ b


def resnet_main(configs: list[str], runs: int, pinned: str) -> int:
    from bench.common import cpu_model

    print(
        f"bench_sim --resnet: int8 ResNet-18 224x224; {cpu_model()}; numba {numba.__version__}, "
        f"1 thread, {pinned}; medians of {runs} runs"
    )
    columns = [
        Column("config"),
        Column("kernels", legend="the simulator's GEMM kernels, or the float32 BLAS peer"),
        Column("sim s", "float", "median seconds of the programs' simulation", digits=3),
        Column("Mcycles/s", "float1", "simulated cycles per second, millions"),
        Column("GMAC/s", "float", "MACs per second, billions"),
        Column("x BLAS", "float1", "seconds over BLAS's seconds for the same MACs"),
    ]
    for config in configs:
        t0 = time.perf_counter()
        programs = resnet18_programs(config)
        compile_s = time.perf_counter() - t0
        results = {
            k: [vta_sim.simulate(p, trace=False, kernels=k) for p in programs] for k in KERNELS
        }
        # rounds interleave the two simulators and BLAS, so that a change in the machine's load
        # during the measurement reaches all three alike
        blas = blas_gemm()
        samples: dict[str, list[float]] = {k: [] for k in (*KERNELS, "blas")}
        for _ in range(runs):
            for k in KERNELS:
                t0 = time.perf_counter()
                for p in programs:
                    vta_sim.simulate(p, trace=False, kernels=k)
                samples[k].append(time.perf_counter() - t0)
            samples["blas"].append(timed(blas, 20) / (3136 * 576 * 64))
        times = {k: statistics.median(v) for k, v in samples.items()}
        dense, ref = results["dense"], results["reference"]
        same = all(
            a.cycles == b.cycles and np.array_equal(a.dram, b.dram)
            for a, b in zip(dense, ref, strict=True)
        )
        cycles = sum(r.cycles for r in dense)
        macs = sum(r.macs for r in dense)
        blas_s = times["blas"] * macs
        print(
            f"\n{config}: {len(programs)} accelerator programs, {cycles:,} cycles, "
            f"{macs / 1e9:.2f} G MACs (compiled in {compile_s:.1f} s, not timed); "
            f"same cycles and DRAM with either kernels: {same}"
        )
        table: list[tuple[object, ...]] = [
            (config, k, times[k], cycles / times[k] / 1e6, macs / times[k] / 1e9, times[k] / blas_s)
            for k in KERNELS
        ]
        table.append((config, "BLAS f32", blas_s, "-", macs / blas_s / 1e9, 1.0))
        print(format_table(columns, table))
        print(f"speed-up dense / reference: {times['reference'] / times['dense']:.2f}x")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_sim", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--blocks", type=int, default=1024, help="pipeline blocks (default 1024)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=8,
        help="iter_in of each GEMM: 4096 micro-ops per unit (default 8)",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs, median reported")
    parser.add_argument(
        "--resnet",
        nargs="+",
        metavar="CONFIG",
        help="time whole int8 ResNet-18 simulations on these presets instead",
    )
    args = parser.parse_args(argv)
    pinned = _pin_one_cpu()
    if args.resnet:
        return resnet_main(args.resnet, args.runs, pinned)
    cfg = isa.load_config("default")
    prog = gemm_program(cfg, args.blocks, args.repeat)

    # warm-up: JIT compilation (or the cache load) and first-touch costs are not timed
    result = vta_sim.simulate(prog, trace=False)
    pargs = peer_args(prog)
    peer_gemm(*pargs)

    sim_s = timed(lambda: vta_sim.simulate(prog, trace=False), args.runs)
    peer_s = timed(lambda: peer_gemm(*pargs), args.runs)
    uops, cycles = result.gemm_uops, result.cycles
    macs = result.macs
    print(
        f"bench_sim: preset default ({cfg.batch}x{cfg.block_in}x{cfg.block_out}), "
        f"{prog.insn_count} instructions, {uops} GEMM micro-ops, {cycles} cycles "
        f"(utilization {result.utilization:.3f}); numba {numba.__version__}, 1 thread, "
        f"{pinned}; medians of {args.runs} runs"
    )
    columns = [
        Column("run"),
        Column("wall s", "float", "median seconds of one run", digits=3),
        Column("Muops/s", "float1", "GEMM micro-ops per second, millions"),
        Column("GMAC/s", "float", "MACs per second, billions"),
        Column("Mcycles/s", "float1", "simulated cycles per second, millions (the simulator)"),
    ]
    rows = [
        ("simulator (functional + timing)", sim_s, cycles / sim_s / 1e6),
        ("peer: plain numba GEMM loop", peer_s, "-"),
    ]
    table = [(name, s, uops / s / 1e6, macs / s / 1e9, cyc) for name, s, cyc in rows]
    print(format_table(columns, table))
    print(f"ratio simulator / peer (micro-ops per second): {peer_s / sim_s:.2f}")

    small = gemm_program(cfg, min(args.blocks, 256), args.repeat)
    large = gemm_program(cfg, min(args.blocks, 256), 4 * args.repeat)
    vta_sim.simulate(small, trace=True)  # first-touch allocations out of the measurement
    (p1, r1), (p4, r4) = memory_of(small), memory_of(large)
    print(
        f"memory, trace on, {small.insn_count} instructions: "
        f"tracemalloc peak {p1 / 2**20:.2f} MiB at 1x micro-ops, {p4 / 2**20:.2f} MiB at 4x; "
        f"peak RSS {r1 / 1024:.1f} MiB then {r4 / 1024:.1f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
