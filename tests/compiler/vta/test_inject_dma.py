"""DMA injection: copy nests to 2-D transfers with padding, and splitting to field limits."""

import numpy as np
import pytest

import isa
from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, Var, const, op, to_text
from compiler.targets.vta import VTATargetError, get_vta_target
from compiler.targets.vta.dma import DmaLimits, dma_limits, load_2d, store_2d, zero_fill
from compiler.targets.vta.passes.inject_dma import lower_copy

from .helpers import lower_dumps, small_conv

CFG = isa.load_config("default")
LIM = dma_limits(CFG)
MAX_SIZE = LIM.y_size
SRAM = get_vta_target("default").sram


def loop(v, n, body):
    return For(v, IntImm(0), IntImm(n), ForKind.SERIAL, body)


def test_conv_tiles_become_padded_2d_loads_and_a_store():
    tgt, s, args = small_conv(h=6, c_blocks=2, o_blocks=4, pad=1)
    text = lower_dumps(tgt, s, args)[1]["inject_dma"]
    loads = [ln.strip() for ln in text.splitlines() if "vta.load_" in ln]
    # the padded input window: 8 rows of 8 entries, one zero column each side, rows 6 apart
    assert any(ln.startswith("vta.load_inp(address_of(conv_pad[0])") and
               ln.endswith(", 8, 8, 6, 1, 1, 1, 1)") for ln in loads), loads  # fmt: skip
    # weights: (co, ci, ky, kx) merge into rows of 9 tiles, one row per output block
    assert any("vta.load_wgt(" in ln and ln.endswith(", 2, 9, 18, 0, 0, 0, 0)") for ln in loads)
    stores = [ln.strip() for ln in text.splitlines() if "vta.store_out" in ln]
    # two whole output-channel blocks of 6x6 pixels are contiguous in DRAM: one row of 72
    assert stores and stores[0].endswith(", 1, 72, 72)"), stores


def test_padding_depends_on_the_tile_position():
    tgt, s, args = small_conv(h=6, pad=1, knobs=None)
    from compiler.topi.vta import Conv2dKnobs

    knobs = Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=2, oc_nthread=2)
    tgt, s, args = small_conv(h=6, pad=1, knobs=knobs)
    text = lower_dumps(tgt, s, args)[1]["simplify_dma"]
    line = next(ln for ln in text.splitlines() if "vta.load_inp" in ln)
    # top padding only for the first row tile, bottom padding only for the last
    assert "max(1 - i2.outer*3, 0)" in line and "max(i2.outer*3 - 2, 0)" in line


def copy_nest(cond=None, dst_scope=SRAM.inp, src_dtype="int8", value=None):
    """pad[y, x, l] = X[y0 + y - 1, x - 1, l] (a 4x6 window of 4-lane entries)."""
    X = Buffer("X", (8 * 6 * 4,), src_dtype)
    P = Buffer("pad", (4 * 6 * 4,), "int8" if dst_scope is not SRAM.acc else "int32", dst_scope)
    y, x, lane, y0 = Var("y"), Var("x"), Var("l"), Var("y0")
    src = X[(y0 + y - 1) * 24 + (x - 1) * 4 + lane]
    if value is None:
        value = src if cond is None else op.if_then_else(cond(y0 + y, x), src, const(0, "int8"))
    body = BufferStore(P, value, ((y * 6 + x) * 4 + lane,))
    return loop(y, 4, loop(x, 6, loop(lane, 4, body))), y0


def test_padding_conditions_become_pad_fields():
    nest, _ = copy_nest(lambda yy, xx: (yy >= 1) & (yy < 9) & (xx >= 1) & (xx < 6))
    text = to_text(lower_copy(CFG, nest))
    assert text.startswith("vta.load_inp(address_of(pad[0])")
    # rows 4 of width 6, stride 6 entries; x padding 1 before, 1 after (x < 6 with x in 0..5)
    assert ", 4, 6, 6, " in text and text.endswith(", 1, 0)")


def test_condition_on_host_loops_selects_whole_transfers():
    X = Buffer("X", (64,), "int8")
    P = Buffer("p", (16,), "int8", SRAM.inp)
    t, lane = Var("t"), Var("l")
    value = op.if_then_else(t >= 2, X[t * 4 + lane], const(0, "int8"))
    nest = loop(t, 4, loop(lane, 4, BufferStore(P, value, (t * 4 + lane,))))
    text = to_text(lower_copy(CFG, nest))
    # the only loop left is an entry loop (x = 4 entries) whose bound is a padding count
    assert "vta.load_inp(address_of(p[0]), address_of(X[" in text


def test_non_contiguous_sram_side_stays_a_host_loop():
    X = Buffer("X", (64,), "int8")
    P = Buffer("p", (32,), "int8", SRAM.inp)
    t, lane = Var("t"), Var("l")
    nest = loop(t, 4, loop(lane, 4, BufferStore(P, X[t * 4 + lane], (t * 8 + lane,))))
    text = to_text(lower_copy(CFG, nest))
    assert text.splitlines()[0].startswith("for t in range(4):")
    assert "vta.load_inp(address_of(p[t*8]), address_of(X[t*4]), 1, 1, 1" in text


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: copy_nest(
                value=op.if_then_else(Var("c", "bool"), const(1, "int8"), const(2, "int8"))
            )[0],  # fmt: skip
            "padding must be zeros, the else-branch is int8\\(2\\)",
        ),
        (
            lambda: copy_nest(value=Buffer("X", (8,), "int8")[0] * const(2, "int8"))[0],
            "a DMA load copies from main memory",
        ),
        (lambda: copy_nest(dst_scope=SRAM.acc)[0], "not int8 into int32"),
    ],
)
def test_what_a_dma_cannot_copy_is_named(make, message):
    with pytest.raises(VTATargetError, match=message):
        lower_copy(CFG, make())


def test_entries_must_be_whole():
    X = Buffer("X", (64,), "int8")
    P = Buffer("p", (64,), "int8", SRAM.inp)
    i = Var("i")
    nest = loop(i, 2, BufferStore(P, X[i], (i,)))
    with pytest.raises(VTATargetError, match="whole SRAM entries of 4 consecutive values"):
        lower_copy(CFG, nest)


# ---- splitting to the fields' limits ----------------------------------------------------------
class Recorder:
    """Applies LOAD/STORE fields to numpy arrays (entries numbered by value)."""

    def __init__(self, sram_size=1 << 20, dram=None, lim=LIM):
        self.lim = lim
        self.sram = np.full(sram_size, -1, np.int64)
        self.dram = np.arange(1 << 22) if dram is None else dram
        self.insns = []

    def load(self, mem, sram, dram, y, x, stride, pad=(0, 0, 0, 0)):
        y0, y1, x0, x1 = pad
        lim = self.lim
        assert 0 < x <= lim.x_size and y <= lim.y_size and stride <= lim.x_stride
        pad_max = (lim.y_pad_0, lim.y_pad_1, lim.x_pad_0, lim.x_pad_1)
        assert all(0 <= p <= m for p, m in zip(pad, pad_max, strict=True))
        self.insns.append((y, x, stride, pad))
        width = x0 + x + x1
        rows = []
        rows += [[0] * width] * y0
        for r in range(y):
            start = dram + r * stride
            rows.append([0] * x0 + list(self.dram[start : start + x]) + [0] * x1)
        rows += [[0] * width] * y1
        flat = np.array([v for row in rows for v in row], np.int64)
        self.sram[sram : sram + flat.size] = flat

    def store(self, sram, dram, y, x, stride):
        lim = self.lim
        assert 0 < x <= lim.x_size and y <= lim.y_size and stride <= lim.x_stride
        self.insns.append((y, x, stride))
        for r in range(y):
            self.dram[dram + r * stride : dram + r * stride + x] = self.sram[
                sram + r * x : sram + r * x + x
            ]


def expected_fill(dram, base, y_ext, x_ext, stride, pads):
    y0, y1, x0, x1 = pads
    out = np.zeros((y_ext, x_ext), np.int64)
    for r in range(y0, y_ext - y1):
        start = base + (r - y0) * stride
        out[r, x0 : x_ext - x1] = dram[start : start + x_ext - x0 - x1]
    return out.reshape(-1)


@pytest.mark.parametrize(
    "y_ext, x_ext, stride, pads, n_insns",
    [
        (4, 8, 20, (1, 0, 1, 1), 1),  # fits one instruction
        (40, 6, 10, (20, 18, 1, 1), 3),  # padding rows beyond 15 become zero fills
        (3, 40, 50, (0, 0, 20, 17), None),  # wide column padding: row by row
        (2, 8, 70000, (0, 0, 0, 0), 2),  # stride beyond 16 bits: row by row
        (5, 7, 9, (5, 0, 0, 0), 1),  # all padding: one zero fill
        (3, 4, 4, (0, 0, 4, 0), 1),  # all padding along x
    ],
)
def test_load_splits_fill_exactly_the_same_entries(y_ext, x_ext, stride, pads, n_insns):
    rec = Recorder()
    load_2d(rec, isa.MemType.INP, 100, 1000, y_ext=y_ext, x_ext=x_ext, x_stride=stride, pads=pads,
            lim=LIM)  # fmt: skip
    want = expected_fill(rec.dram, 1000, y_ext, x_ext, stride, pads)
    np.testing.assert_array_equal(rec.sram[100 : 100 + want.size], want)
    assert rec.sram[100 + want.size] == -1  # nothing written past the window
    if n_insns is not None:
        assert len(rec.insns) == n_insns


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_dma_limits_are_the_format_declarations(preset):
    cfg = isa.load_config(preset)
    lim = dma_limits(cfg)
    for name in ("y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
        assert getattr(lim, name) == isa.limits(cfg).max("mem", name)


@pytest.mark.parametrize(
    "y_ext, x_ext, stride, pads",
    [(9, 5, 7, (3, 4, 1, 2)), (4, 9, 9, (0, 0, 0, 0)), (5, 3, 12, (0, 0, 0, 0))],
)
def test_splitting_follows_the_limits_it_is_given(y_ext, x_ext, stride, pads):
    # narrow fields (as a format with narrower declarations would give) split the same transfer
    # into more instructions that still fill exactly the same entries
    narrow = DmaLimits(y_size=2, x_size=4, x_stride=8, y_pad_0=1, y_pad_1=2, x_pad_0=1, x_pad_1=1)
    rec = Recorder(lim=narrow)
    load_2d(rec, isa.MemType.INP, 100, 1000, y_ext=y_ext, x_ext=x_ext, x_stride=stride,
            pads=pads, lim=narrow)  # fmt: skip
    want = expected_fill(rec.dram, 1000, y_ext, x_ext, stride, pads)
    np.testing.assert_array_equal(rec.sram[100 : 100 + want.size], want)
    assert rec.sram[100 + want.size] == -1


def test_load_of_more_rows_than_the_field_holds():
    rec = Recorder(dram=np.arange(80000) % 1000)
    load_2d(rec, isa.MemType.INP, 0, 0, y_ext=70000, x_ext=1, x_stride=1, lim=LIM)
    assert [i[0] for i in rec.insns] == [MAX_SIZE, 70000 - MAX_SIZE]
    np.testing.assert_array_equal(rec.sram[:70000], np.arange(70000) % 1000)


def test_zero_fill_of_many_entries():
    rec = Recorder()
    rec.sram[:] = 7
    zero_fill(rec, isa.MemType.INP, 5, 100000, lim=LIM)
    assert (rec.sram[5:100005] == 0).all() and rec.sram[4] == 7 and rec.sram[100005] == 7


def test_store_splits_rows_and_wide_rows():
    rec = Recorder()
    rec.sram[:200] = np.arange(200)
    rec.dram = np.zeros(1 << 20, np.int64)
    store_2d(rec, 0, 10, y_ext=2, x_ext=70, x_stride=70000, lim=LIM)
    assert len(rec.insns) == 2
    np.testing.assert_array_equal(rec.dram[10:80], np.arange(70))
    np.testing.assert_array_equal(rec.dram[70010:70080], np.arange(70, 140))
