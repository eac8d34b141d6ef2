"""The RTL's parameters, read back with pyverilog, against the hardware config in isa/.

Every module includes the generated header; after preprocessing, the test evaluates each
module's localparams (header and derived) and the parameters of every buffer instance, and
compares them with numbers computed from ``isa`` directly: sizes, depths, every field position,
opcodes, timing constants, buffer shapes and banking, and the DRAM port's priority order.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

import isa
from hw.sim import RTL_DIR, rtl_sources
from isa import timing
from isa.formats import FORMATS, INSN_BITS, UOP_BITS, layout
from isa.gen import rtl_header
from isa.insn import AluOp, MemType, Opcode

vparser = pytest.importorskip("pyverilog.vparser.parser")
vast = pytest.importorskip("pyverilog.vparser.ast")

GENERATED = RTL_DIR / "generated"

pytestmark = pytest.mark.rtl


def _need_iverilog() -> None:
    if shutil.which("iverilog") is None:
        pytest.skip("pyverilog preprocesses with iverilog, which is not on PATH")


class Evaluator:
    """Evaluates constant expressions of a module (localparams, parameter overrides)."""

    def __init__(self, values: dict[str, int]):
        self.values = values

    def __call__(self, node) -> int:
        ev = self
        if isinstance(node, vast.Rvalue):
            return ev(node.var)
        if isinstance(node, vast.IntConst):
            text = node.value.replace("_", "")
            if "'" in text:
                width, rest = text.split("'", 1)
                base = {"d": 10, "h": 16, "b": 2, "o": 8}[rest[0].lower()]
                return int(rest[1:], base)
            return int(text)
        if isinstance(node, vast.Identifier):
            return self.values[node.name]
        if isinstance(node, vast.Pointer):  # NAME[k]: bit select of a constant
            return (ev(node.var) >> ev(node.ptr)) & 1
        if isinstance(node, vast.Partselect):
            msb, lsb = ev(node.msb), ev(node.lsb)
            return (ev(node.var) >> lsb) & ((1 << (msb - lsb + 1)) - 1)
        if isinstance(node, vast.SystemCall) and node.syscall == "clog2":
            return math.ceil(math.log2(ev(node.args[0]))) if ev(node.args[0]) > 1 else 0
        if isinstance(node, vast.Cond):
            return ev(node.true_value) if ev(node.cond) else ev(node.false_value)
        binary = {
            vast.Plus: lambda a, b: a + b,
            vast.Minus: lambda a, b: a - b,
            vast.Times: lambda a, b: a * b,
            vast.Divide: lambda a, b: a // b,
            vast.Sll: lambda a, b: a << b,
            vast.Srl: lambda a, b: a >> b,
            vast.GreaterThan: lambda a, b: int(a > b),
            vast.LessThan: lambda a, b: int(a < b),
            vast.GreaterEq: lambda a, b: int(a >= b),
            vast.LessEq: lambda a, b: int(a <= b),
            vast.Eq: lambda a, b: int(a == b),
            vast.NotEq: lambda a, b: int(a != b),
        }
        for cls, fn in binary.items():
            if isinstance(node, cls):
                return fn(ev(node.left), ev(node.right))
        raise NotImplementedError(type(node).__name__)


def parse(path: Path, include: Path, tmp: Path):
    """The module of ``path`` with its constants evaluated: (module AST, {name: value})."""
    parser = vparser.VerilogCodeParser(
        [str(path)],
        preprocess_output=str(tmp / f"{path.stem}.pp.v"),
        preprocess_include=[str(include), str(RTL_DIR)],
        outputdir=str(tmp),
        debug=False,
    )
    mod = next(d for d in parser.parse().description.definitions if isinstance(d, vast.ModuleDef))
    values: dict[str, int] = {}
    ev = Evaluator(values)
    for p in mod.paramlist.params if mod.paramlist else ():
        for x in p.list:
            values[x.name] = ev(x.value)
    for item in mod.items:
        if isinstance(item, vast.Decl):
            for x in item.list:
                if isinstance(x, (vast.Localparam, vast.Parameter)):
                    values[x.name] = ev(x.value)
    return mod, values


def expected_header(cfg) -> dict[str, int]:
    """Every generated constant, computed from isa (not from the generator)."""
    exp = {
        "ISA_VERSION": isa.ISA_VERSION,
        "BATCH": cfg.batch,
        "BLOCK_IN": cfg.block_in,
        "BLOCK_OUT": cfg.block_out,
        "INP_BITS": cfg.inp_bits,
        "WGT_BITS": cfg.wgt_bits,
        "OUT_BITS": cfg.out_bits,
        "ACC_BITS": cfg.acc_bits,
        "BUS_BYTES": cfg.bus_bytes,
        "BUS_BITS": 8 * cfg.bus_bytes,
        "DRAM_LATENCY": cfg.dram_latency,
        "CMD_QUEUE_DEPTH": cfg.cmd_queue_depth,
        "DEP_QUEUE_DEPTH": cfg.dep_queue_depth,
        "GEMM_II": cfg.gemm_ii,
        "ALU_II": cfg.alu_ii,
        "ALU_IMM_II": cfg.alu_imm_ii,
        "FETCH_BURST": timing.FETCH_BURST,
        "GEMM_PIPE_LATENCY": timing.GEMM_PIPE_LATENCY,
        "ALU_PIPE_LATENCY": timing.ALU_PIPE_LATENCY,
    }
    for buf in ("uop", "inp", "wgt", "acc", "out"):
        eb = cfg.elem_bytes_of(buf)
        depth = cfg.depth_of(buf)
        exp |= {
            f"{buf.upper()}_ELEM_BYTES": eb,
            f"{buf.upper()}_ELEM_BITS": 8 * eb,
            f"{buf.upper()}_DEPTH": depth,
            f"LOG_{buf.upper()}_DEPTH": int(math.log2(depth)),
        }
    for enum, prefix in ((Opcode, "OPCODE"), (MemType, "MEM"), (AluOp, "ALU")):
        exp |= {f"{prefix}_{m.name}": int(m) for m in enum}
    for fmt in FORMATS:
        for f in layout(fmt, cfg).fields:
            exp[f"{fmt.upper()}_{f.name.upper()}_LSB"] = f.lsb
            exp[f"{fmt.upper()}_{f.name.upper()}_W"] = f.width
    return exp


def header_dir(preset: str, tmp: Path) -> Path:
    if preset == "default":
        return GENERATED
    d = tmp / f"include-{preset}"
    d.mkdir(exist_ok=True)
    (d / "vta_params.vh").write_text(rtl_header(isa.load_config(preset)))
    return d


def test_committed_header_is_current():
    text = (GENERATED / "vta_params.vh").read_text()
    assert text.rstrip("\n") == rtl_header(isa.load_config("default")).rstrip("\n"), (
        "hw/rtl/generated/vta_params.vh is stale: regenerate it with isa.gen.write_generated"
    )


@pytest.mark.parametrize("preset", isa.preset_names())
def test_every_module_sees_the_config(preset, tmp_path):
    """All modules with the committed default header; the top with the other presets'."""
    _need_iverilog()
    cfg = isa.load_config(preset)
    inc = header_dir(preset, tmp_path)
    exp = expected_header(cfg)
    sources = rtl_sources() if preset == "default" else [RTL_DIR / "vta_top.v"]
    for src in sources:
        mod, values = parse(src, inc, tmp_path)
        if src.stem == "vta_sram":  # the generic buffer: its parameters come from instances
            continue
        got = {k: values[k] for k in exp}
        assert got == exp, f"{src.name}: parameters differ from the {preset} config"
        assert values["INSN_BITS"] == INSN_BITS
        assert values["UOP_ELEM_BITS"] == UOP_BITS


def _instances(mod):
    for item in mod.items:
        if isinstance(item, vast.InstanceList):
            for inst in item.instances:
                yield item, inst


@pytest.mark.parametrize("preset", isa.preset_names())
def test_buffers_have_the_configured_shapes(preset, tmp_path):
    _need_iverilog()
    cfg = isa.load_config(preset)
    inc = header_dir(preset, tmp_path)
    bus = cfg.bus_bytes
    lanes = {b: max(1, bus // cfg.elem_bytes_of(b)) for b in ("uop", "inp", "wgt", "out")}
    lanes["acc"] = lanes["out"]  # ACC8 loads bring out-sized elements into acc
    seen = {}
    for src in ("vta_top", "vta_compute"):
        mod, values = parse(RTL_DIR / f"{src}.v", inc, tmp_path)
        ev = Evaluator(values)
        for item, inst in _instances(mod):
            if item.module != "vta_sram":
                continue
            params = {p.paramname: p.argname for p in item.parameterlist}
            # no literal numbers: every buffer parameter names a header constant
            assert all(isinstance(v, vast.Identifier) for v in params.values()), inst.name
            seen[inst.name] = {k: ev(v) for k, v in params.items()}
    for buf in ("uop", "inp", "wgt", "acc", "out"):
        assert seen[f"u_{buf}_buf"] == {
            "WIDTH": 8 * cfg.elem_bytes_of(buf),
            "DEPTH": cfg.depth_of(buf),
            "BANKS": lanes[buf],
        }, buf


def test_port_priority_matches_the_timing_contract(tmp_path):
    """The arbiter grants in index order; vta_top wires fetch, load, compute, store to it."""
    _need_iverilog()
    mod, _ = parse(RTL_DIR / "vta_top.v", GENERATED, tmp_path)
    arb = next(inst for item, inst in _instances(mod) if item.module == "vta_port_arbiter")
    req = next(p.argname for p in arb.portlist if p.portname == "req")
    names = [x.name for x in req.list]  # {msb, ..., lsb}: index 0 is the last
    order = [n.split("_")[0] for n in reversed(names)]
    prefix = {"f": "fetch", "l": "load", "c": "compute", "s": "store"}
    assert tuple(prefix[o] for o in order) == timing.PORT_PRIORITY
