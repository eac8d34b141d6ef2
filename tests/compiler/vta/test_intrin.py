"""The GEMM intrinsic declared from the config and the SRAM scopes."""

import pytest

import isa
from compiler import te
from compiler.errors import CompilerError
from compiler.ir import get_scope
from compiler.targets import get_target
from compiler.targets.vta.intrin import gemm_intrinsic, make_scopes

from .helpers import PRESETS


@pytest.mark.parametrize("preset", PRESETS)
def test_gemm_declaration_is_the_micro_op(preset):
    cfg = isa.load_config(preset)
    gemm = gemm_intrinsic(cfg)
    op = gemm.op
    inp, wgt = op.input_tensors()
    assert (inp.shape, wgt.shape, op.shape) == (
        (cfg.batch, cfg.block_in),
        (cfg.block_out, cfg.block_in),
        (cfg.batch, cfg.block_out),
    )
    assert (inp.dtype.name, wgt.dtype.name, op.dtype.name) == ("int8", "int8", "int32")
    assert [iv.extent for iv in op.reduce_axis] == [cfg.block_in]
    assert isinstance(op.body, te.Reduce) and op.body.combiner.name == "sum"
    scopes = make_scopes(cfg)
    assert gemm.attrs["scopes"]["inp"] is scopes.inp
    assert gemm.attrs["scopes"]["wgt"] is scopes.wgt
    assert gemm.attrs["scopes"]["out"] is scopes.acc


@pytest.mark.parametrize("preset", PRESETS)
def test_scopes_unit_is_one_entry_and_capacity_the_buffer(preset):
    cfg = isa.load_config(preset)
    s = make_scopes(cfg)
    assert s.inp.unit_bits == cfg.inp_elem_bytes * 8
    assert s.wgt.unit_bits == cfg.wgt_elem_bytes * 8
    assert s.acc.unit_bits == cfg.acc_elem_bytes * 8
    assert (s.inp.capacity_bytes, s.wgt.capacity_bytes, s.acc.capacity_bytes) == (
        cfg.inp_buf_bytes,
        cfg.wgt_buf_bytes,
        cfg.acc_buf_bytes,
    )


def test_each_target_resolves_its_own_scopes_by_name():
    t = get_target("vta", config="vta-1x16x16")
    t2 = get_target("vta", config="default")
    assert t.resolve_scope("local.acc_buffer") is t.sram.acc
    assert t2.resolve_scope("local.acc_buffer") is t2.sram.acc
    assert t2.sram.acc.capacity_bytes == 32 * 1024
    assert t.sram.acc.capacity_bytes == 128 * 1024
    # the names are the target's, not the process's
    with pytest.raises(CompilerError, match="unknown memory scope 'local.acc_buffer'"):
        get_scope("local.acc_buffer")
    with pytest.raises(CompilerError, match="made for another configuration"):
        t.resolve_scope(t2.sram.acc)
    with pytest.raises(CompilerError, match="its scopes are global, local.acc_buffer"):
        t.resolve_scope("local.acc_bufer")
