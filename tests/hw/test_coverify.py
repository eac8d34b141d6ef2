"""Co-verification: programs run bit-exact on the RTL, in step with the simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import isa
from hw import coverify as cv
from hw import programs
from hw.coverify import CoverifyResult, RtlRun, coverify, first_mismatch, hang_state, run_rtl
from hw.errors import RtlError, RtlHang
from hw.reference import Reference, reference_run
from isa.asm import assemble
from isa.energy import EventCounts, count_events
from isa.insn import AluOp
from tests.hw.conftest import check_events, require, selected_simulators

pytestmark = pytest.mark.rtl

EXAMPLES = Path(isa.__file__).resolve().parent / "examples"
#: docs/timing.md is followed by both models; allow 10% (ISA.md section 5), expect equality.
TOLERANCE = 0.10


def check(result) -> None:
    """Bit-exact; cycles within the tolerance; since both models follow docs/timing.md to the
    cycle, every module's cycles per statistics category equal to the simulator's; and every
    event the energy model prices, counted by the RTL, equal to isa.energy.count_events'."""
    assert result.match, result.mismatch.message()
    if result.sim_cycles is not None:
        ratio = result.cycle_ratio
        assert abs(ratio - 1) <= TOLERANCE, (
            f"simulator {result.sim_cycles} vs RTL {result.rtl_cycles} cycles"
        )
    if result.stats_match is not None:
        assert result.stats_match, f"cycle statistics differ: {result.stats_diff()}"
    check_events(result)


@pytest.mark.parametrize("simulator", selected_simulators(core=True))
@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_hand_assembled_default(name, simulator, build_root):
    require(simulator)
    cfg = isa.load_config("default")
    check(coverify(programs.PROGRAMS[name](cfg), simulator=simulator, build_root=build_root))


@pytest.mark.parametrize("simulator", selected_simulators())
@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_hand_assembled_presets(name, preset, simulator, build_root):
    require(simulator)
    cfg = isa.load_config(preset)
    check(coverify(programs.PROGRAMS[name](cfg), simulator=simulator, build_root=build_root))


#: Configs beyond the presets: other bus widths and latencies, initiation intervals, small
#: queues. The RTL takes every number from the generated header, so each must just work.
CUSTOM = {
    "bus16-lat1": ("default", {"bus_bytes": 16, "dram_latency": 1}),
    "bus4-ii": (
        "default",
        {"bus_bytes": 4, "dram_latency": 3, "gemm_ii": 2, "alu_ii": 3, "alu_imm_ii": 1},
    ),
    "bus32-queues": (
        "4x4x4",
        {"bus_bytes": 32, "dram_latency": 7, "cmd_queue_depth": 4, "dep_queue_depth": 2},
    ),
}


@pytest.mark.parametrize("simulator", selected_simulators())
@pytest.mark.parametrize("custom", list(CUSTOM))
@pytest.mark.parametrize("name", [n for n in programs.PROGRAMS if n != "token_flood"])
def test_hand_assembled_custom_configs(name, custom, simulator, build_root):
    require(simulator)
    base, changes = CUSTOM[custom]
    cfg = isa.load_config(base).replace(name=custom, **changes)
    check(coverify(programs.PROGRAMS[name](cfg), simulator=simulator, build_root=build_root))


@pytest.mark.parametrize("example", ["alu_ops", "matmul16", "padded_load"])
def test_assembler_examples(example, build_root):
    require("icarus")
    prog = assemble((EXAMPLES / f"{example}.vasm").read_text(), source=f"{example}.vasm")
    check(coverify(prog, build_root=build_root))


@pytest.mark.parametrize("simulator", selected_simulators(core=True))
@pytest.mark.parametrize("seed", range(12))
def test_random_programs_default(seed, simulator, build_root):
    """Random double-buffered programs: loads with padding, acc loads, GEMM/ALU loops, stores."""
    require(simulator)
    prog = programs.random_program(isa.load_config("default"), seed)
    check(coverify(prog, simulator=simulator, build_root=build_root))


@pytest.mark.parametrize("simulator", selected_simulators())
@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("seed", range(12, 16))
def test_random_programs_presets(seed, preset, simulator, build_root):
    require(simulator)
    check(
        coverify(
            programs.random_program(isa.load_config(preset), seed),
            simulator=simulator,
            build_root=build_root,
        )
    )


@pytest.mark.parametrize("simulator", selected_simulators())
@pytest.mark.parametrize("preset", isa.preset_names())
def test_tiled_double_buffered_gemm(preset, simulator, build_root):
    """A GEMM streamed through the buffers in chunks: the shape the benchmark runs full size."""
    require(simulator)
    prog = programs.tiled_gemm(isa.load_config(preset), m=5, k=8, n=6, kt=2, nt=3)
    check(coverify(prog, simulator=simulator, build_root=build_root))


@pytest.mark.parametrize("seed", range(4))
def test_random_gemm_shapes(seed, build_root):
    require("icarus")
    rng = np.random.default_rng(100 + seed)
    m, k, n = (int(v) for v in rng.integers(1, 6, size=3))
    prog = programs.gemm(
        isa.load_config("default"), m=m, k=k, n=n, seed=seed, requant=bool(seed % 2)
    )
    check(coverify(prog, build_root=build_root))


@pytest.mark.parametrize("name", ["gemm", "pingpong", "strided", "alu_all", "padded"])
def test_dram_gaps_and_latency_keep_results(name, build_root):
    """Idle cycles between beats and a longer latency change timing only, never results, nor
    any event count."""
    require("icarus")
    prog = programs.PROGRAMS[name](isa.load_config("default"))
    run = run_rtl(prog, build_root=build_root, plusargs=["+DRAM_GAPS=3", "+DRAM_EXTRA_LATENCY=7"])
    assert run.finished
    mism = first_mismatch(prog, reference_run(prog).dram, run.dram)
    assert mism is None, mism.message()
    ref = cv.event_dict(count_events(prog))
    bad = [f"{e}: RTL {n}, count_events {ref[e]}" for e, n in run.events.items() if n != ref[e]]
    assert run.events and not bad, f"{name} with DRAM gaps: {'; '.join(bad)}"


def test_hang_names_the_blocked_instructions(build_root):
    require("icarus")
    prog = assemble((EXAMPLES / "deadlock.vasm").read_text(), source="deadlock.vasm")
    with pytest.raises(RtlHang) as e:
        coverify(
            prog,
            build_root=build_root,
            max_cycles=400,
            reference=Reference(prog.dram.copy(), None, "none"),
        )
    msg = str(e.value)
    assert "no FINISH within 400 cycles" in msg
    assert "load: last issued #0 LOAD INP; idle" in msg
    assert (
        "compute: none issued yet; #1 GEMM (pop_prev_dep) waits for a token in "
        "load->compute (0 tokens)"
    ) in msg
    assert "tokens: load->compute=0" in msg


@pytest.mark.parametrize("name", ["token_flood", "pingpong"])
def test_hang_matches_the_simulators_deadlock(name, build_root):
    """Queues too small for the program: both models stop in the same state."""
    require("icarus")
    import vta_sim

    cfg = isa.load_config("default").replace(
        name="tiny-queues", cmd_queue_depth=2, dep_queue_depth=1
    )
    prog = programs.PROGRAMS[name](cfg)
    with pytest.raises(vta_sim.DeadlockError) as dead:
        vta_sim.simulate(prog, trace=False)
    report = dead.value.report
    run = run_rtl(prog, build_root=build_root, max_cycles=report["cycle"] + 200)
    assert not run.finished
    hs = hang_state(prog, run.state)
    assert hs["dependency_queues"] == report["dependency_queues"]
    assert hs["command_queues"] == report["command_queues"]
    for m, entry in report["modules"].items():
        assert hs["modules"][m]["instruction"] == entry["instruction"], m
        assert hs["modules"][m]["waits_for"] == entry["waits_for"], m


def test_mismatch_names_tensor_and_element(build_root):
    require("icarus")
    prog = programs.gemm(isa.load_config("default"), m=2, k=1, n=2)
    ref = reference_run(prog)
    wrong = ref.dram.copy()
    c = prog.symbols["C"]
    wrong[c.offset + 5] ^= 0x40  # element (0, 1, 0, 1) of C: (m, n, batch, block_out)
    result = coverify(
        prog, build_root=build_root, reference=Reference(wrong, ref.cycles, ref.source)
    )
    assert not result.match
    msg = result.mismatch.message()
    assert msg.startswith("tensor 'C' element [0, 1, 0, 1]: expected ")
    assert "1 differing bytes" in msg


def test_store_in_flight_at_finish_completes(build_root):
    """FINISH that does not wait for the last STORE: the run ends at FINISH (cycles), nothing
    new issues after it, and the STORE under way still lands, as the simulator applies it."""
    require("icarus")
    cfg = isa.load_config("default")
    b = programs.ProgramBuilder(cfg)
    c = b.tensor("C", shape=(40, cfg.batch, cfg.block_out), role="output")
    u = b.uops("uops", [isa.Uop(0, 0, 0)])
    b.add(
        isa.Load(memory_type=isa.MemType.UOP, dram_base=u, x_size=1, x_stride=1),
        isa.Alu(
            alu_opcode=isa.AluOp.ADD,
            use_imm=True,
            imm=5,
            uop_begin=0,
            uop_end=1,
            iter_out=40,
            dst_factor_out=1,
            push_next_dep=True,
        ),
        isa.Store(
            sram_base=0,
            dram_base=b.elem(c, isa.MemType.OUT),
            x_size=40,
            x_stride=40,
            pop_prev_dep=True,
        ),
        isa.Load(memory_type=isa.MemType.UOP),  # a compute NOP: FINISH soon after the ALU
        isa.Finish(),
    )
    check(coverify(b.build(), build_root=build_root))


def _result_with_events(prog, events):
    """A co-verification result of ``prog`` whose RTL reported ``events``."""
    run = RtlRun(prog, "icarus", True, 36, prog.dram, {}, 0.0, 1000, {}, events)
    return CoverifyResult(
        True, 36, 36, "vta_sim", None, run, None, cv.event_dict(count_events(prog))
    )


def test_event_mismatch_names_counter_program_and_values():
    prog = programs.gemm(isa.load_config("default"))
    ref = cv.event_dict(count_events(prog))
    assert ref["gemm_uops"] > 0 and ref["sram_writes.inp"] > 0
    assert _result_with_events(prog, dict(ref)).events_match is True
    wrong = dict(ref, **{"sram_writes.inp": ref["sram_writes.inp"] + 3})
    result = _result_with_events(prog, wrong)
    assert result.events_match is False
    n = ref["sram_writes.inp"]
    assert result.events_diff("gemm on default") == (
        f"gemm on default: sram_writes.inp: RTL {n + 3}, count_events {n}"
    )
    assert result.to_dict()["events_diff"].endswith(f"RTL {n + 3}, count_events {n}")
    assert _result_with_events(prog, {}).events_match is None


def test_event_names_cover_count_events():
    """Every counter the RTL has is named after count_events' keys, and a key the RTL has no
    counter for is refused by name rather than left unchecked."""
    assert len(cv.EVENTS) == len(set(cv.EVENTS)) == 2 + 2 * 8 + 5 + 5 + 7
    for a in AluOp:
        assert f"alu_uops.{a.name.lower()}_imm" in cv.EVENTS
    ev = EventCounts(1, 0, {"fma_imm": 2}, {}, {}, {})
    with pytest.raises(RtlError, match="no counter for alu_uops.fma_imm"):
        cv.event_dict(ev)
