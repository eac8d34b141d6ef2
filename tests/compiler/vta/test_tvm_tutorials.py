"""TVM's VTA tutorials written the TVM way, with only the imports changed.

``matrix_multiply`` follows the structure of apache/tvm's ``vta/tutorials/matrix_multiply.py``
and ``conv2d`` that of ``vta/tutorials/optimize/convolution_opt.py`` (sizes reduced to keep the
suite fast): tensors declared in the packed layouts, copy stages with ``set_scope`` or
``cache_read``, ``compute_at``, ``pragma(..., env.dma_copy)``, ``env.alu`` on the requantize
stages, ``tensorize(..., env.gemm)``, virtual threads with ``te.thread_axis("cthread")``,
``te.max``/``te.min`` on two expressions. The RPC part of the tutorials is replaced by the
simulator; the results are checked bit-exact against numpy as the tutorials do.
"""

from __future__ import annotations

import numpy as np
import pytest

# --- the imports: TVM's `import tvm; from tvm import te, topi; import vta` -----------------
from compiler import te
from compiler.targets import vta
from compiler.targets.vta import VTATargetError
from compiler.topi.pad import pad

from .helpers import run


class topi:  # noqa: N801 - stands for TVM's `topi` module (`topi.nn.pad`)
    class nn:  # noqa: N801
        pad = staticmethod(pad)


# --------------------------------------------------------------------------------------------


def matrix_multiply(env, m=16, n=16, o=1):
    """The tutorial's declaration and schedule; returns (schedule, [A, B, C])."""
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute((o, n, env.BATCH, env.BLOCK_IN), lambda *i: A(*i), "A_buf")
    B_buf = te.compute((m, n, env.BLOCK_OUT, env.BLOCK_IN), lambda *i: B(*i), "B_buf")
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype)
            * B_buf[co, ko, ci, ki].astype(env.acc_dtype),
            axis=[ko, ki],
        ),
        name="C_buf",
    )
    C = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT), lambda *i: C_buf(*i).astype(env.inp_dtype), name="C"
    )
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    s[C_buf].reorder(
        ko, s[C_buf].op.axis[0], s[C_buf].op.axis[1], s[C_buf].op.axis[2], s[C_buf].op.axis[3], ki
    )
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(s[C_buf].op.axis[2], env.gemm)
    return s, [A, B, C]


def run_matrix_multiply(env, m=16, n=16, o=1):
    s, (A, B, C) = matrix_multiply(env, m, n, o)
    my_gemm = vta.build(s, [A, B, C], "ext_dev", name="my_gemm")
    rng = np.random.default_rng(0)
    A_orig = rng.integers(-128, 128, size=(o * env.BATCH, n * env.BLOCK_IN)).astype(A.dtype.name)
    B_orig = rng.integers(-128, 128, size=(m * env.BLOCK_OUT, n * env.BLOCK_IN)).astype(
        B.dtype.name
    )
    A_packed = A_orig.reshape(o, env.BATCH, n, env.BLOCK_IN).transpose((0, 2, 1, 3))
    B_packed = B_orig.reshape(m, env.BLOCK_OUT, n, env.BLOCK_IN).transpose((0, 2, 1, 3))
    my_gemm.write("A", np.ascontiguousarray(A_packed))
    my_gemm.write("B", np.ascontiguousarray(B_packed))
    result = run(my_gemm)
    C_ref = np.dot(A_orig.astype(env.acc_dtype), B_orig.T.astype(env.acc_dtype)).astype(
        C.dtype.name
    )
    C_ref = C_ref.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3))
    np.testing.assert_equal(result.read("C"), C_ref)
    return my_gemm, result


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_matrix_multiply_tutorial(preset):
    with vta.get_env(preset) as env:
        run_matrix_multiply(env)


def test_matrix_multiply_loads_each_weight_block_with_one_2d_load():
    """The tutorial's weights for one ``ko`` are m blocks ``n`` entries apart in DRAM: one LOAD
    of m rows (x_size 1, x_stride n), not m loads (VTA's pattern)."""
    env = vta.get_env("default")
    prog, _ = run_matrix_multiply(env)
    wgt_loads = [i for i in prog.instructions() if i.opcode.name == "LOAD" and i.memory_type == 1]
    assert len(wgt_loads) == 16  # one per ko
    assert all((i.y_size, i.x_size, i.x_stride) == (16, 1, 16) for i in wgt_loads)


def conv2d(env, *, height=8, width=8, in_channels=16, out_channels=16, v_threads=2):
    """convolution_opt's declaration and schedule (3x3, stride 1, padding 1)."""
    batch_size = env.BATCH
    kernel_h = kernel_w = 3
    pad_h = pad_w = 1
    stride_h = stride_w = 1
    b_block = 1 // env.BATCH if env.BATCH == 1 else 1
    oc_block = max(1, out_channels // env.BLOCK_OUT // 2)
    ic_block = 1
    h_block = height // 2
    w_block = width
    data_shape = (
        batch_size // env.BATCH, in_channels // env.BLOCK_IN, height, width, env.BATCH,
        env.BLOCK_IN,
    )  # fmt: skip
    kernel_shape = (
        out_channels // env.BLOCK_OUT, in_channels // env.BLOCK_IN, kernel_h, kernel_w,
        env.BLOCK_OUT, env.BLOCK_IN,
    )  # fmt: skip
    fout_height = (height + 2 * pad_h - kernel_h) // stride_h + 1
    fout_width = (width + 2 * pad_w - kernel_w) // stride_w + 1
    output_shape = (
        batch_size // env.BATCH, out_channels // env.BLOCK_OUT, fout_height, fout_width,
        env.BATCH, env.BLOCK_OUT,
    )  # fmt: skip
    dy = te.reduce_axis((0, kernel_h), name="dy")
    dx = te.reduce_axis((0, kernel_w), name="dx")
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_shape, name="kernel", dtype=env.wgt_dtype)
    data_buf = topi.nn.pad(data, [0, 0, pad_h, pad_w, 0, 0], name="data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    res_conv = te.compute(
        output_shape,
        lambda bo, co, i, j, bi, ci: te.sum(
            data_buf[bo, ic, i * stride_h + dy, j * stride_w + dx, bi, ic_tns].astype(env.acc_dtype)
            * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, dy, dx, ic_tns],
        ),
        name="res_conv",
    )
    res_shr = te.compute(output_shape, lambda *i: res_conv(*i) >> 8, name="res_shr")
    inp_max = (1 << (8 - 1)) - 1
    res_max = te.compute(output_shape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: te.min(res_max(*i), inp_max), "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")

    s = te.create_schedule(res.op)
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inner = s[res].split(b, factor=b_block)
    oc_out, oc_inner = s[res].split(oc, factor=oc_block)
    y_bo, y_i = s[res].split(y, factor=h_block)
    x_bo, x_i = s[res].split(x, factor=w_block)
    s[res].reorder(b_out, oc_out, y_bo, x_bo, b_inner, oc_inner, y_i, x_i, b_tns, oc_tns)
    s[res_conv].compute_at(s[res], x_bo)
    s[res_shr].compute_at(s[res], x_bo)
    s[res_max].compute_at(s[res], x_bo)
    s[res_min].compute_at(s[res], x_bo)
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    s[res_conv].set_scope(env.acc_scope)
    s[res_shr].set_scope(env.acc_scope)
    s[res_min].set_scope(env.acc_scope)
    s[res_max].set_scope(env.acc_scope)
    if v_threads > 1:
        _, tx = s[res].split(oc_out, factor=v_threads)
        s[res].reorder(tx, b_out)
        s[res].bind(tx, te.thread_axis("cthread"))
    b_inner, oc_inner, y, x, b_tns, oc_tns = s[res_conv].op.axis
    ic_out, dy, dx, ic_tns = s[res_conv].op.reduce_axis
    ic_out, ic_inner = s[res_conv].split(ic_out, factor=ic_block)
    s[res_conv].reorder(ic_out, b_inner, oc_inner, y, x, ic_inner, dy, dx, b_tns, oc_tns, ic_tns)
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res_conv].tensorize(b_tns, env.gemm)
    s[res_shr].pragma(s[res_shr].op.axis[0], env.alu)
    s[res_min].pragma(s[res_min].op.axis[0], env.alu)
    s[res_max].pragma(s[res_max].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[4], env.dma_copy)
    return s, [data, kernel, res], (data_shape, kernel_shape, output_shape)


def run_conv2d(env, **kw):
    s, (data, kernel, res), (dshape, kshape, oshape) = conv2d(env, **kw)
    my_conv = vta.build(s, [data, kernel, res], "ext_dev", name="my_conv")
    rng = np.random.default_rng(1)
    data_np = rng.integers(-128, 128, size=dshape).astype(data.dtype.name)
    kernel_np = rng.integers(-128, 128, size=kshape).astype(kernel.dtype.name)
    my_conv.write("data", data_np)
    my_conv.write("kernel", kernel_np)
    result = run(my_conv)
    # reference: unpack to NCHW / OIHW, convolve in int32, requantize as the stages do
    d = data_np.transpose((0, 4, 1, 5, 2, 3)).reshape(dshape[0] * dshape[4], -1, *dshape[2:4])
    k = kernel_np.transpose((0, 4, 1, 5, 2, 3)).reshape(kshape[0] * kshape[4], -1, 3, 3)
    d = np.pad(d.astype(np.int32), ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = oshape[2], oshape[3]
    out = np.zeros((d.shape[0], k.shape[0], oh, ow), np.int32)
    for dy in range(3):
        for dx in range(3):
            out += np.einsum("bchw,oc->bohw", d[:, :, dy : dy + oh, dx : dx + ow],
                             k[:, :, dy, dx].astype(np.int32))  # fmt: skip
    ref = np.clip(out >> 8, 0, 127).astype(np.int8)
    ref = ref.reshape(oshape[0], oshape[4], oshape[1], oshape[5], oh, ow)
    np.testing.assert_equal(result.read("res"), ref.transpose((0, 2, 4, 5, 1, 3)))
    return my_conv, result


@pytest.mark.parametrize("v_threads", [1, 2])
def test_convolution_opt_tutorial(v_threads):
    run_conv2d(vta.get_env("default"), v_threads=v_threads)


def test_convolution_opt_tutorial_on_vta_core():
    with vta.get_env("vta-1x16x16") as env:
        run_conv2d(env, in_channels=32, out_channels=64)


def test_cache_write_keeps_the_written_tensors_axes():
    """TVM's habit: after ``s.cache_write(C, scope)``, ``C.op.axis`` are the loops of the stage
    that writes C."""
    env = vta.get_env()
    A = te.placeholder((1, 4, env.BATCH, env.BLOCK_IN), name="A", dtype="int8")
    B = te.placeholder((2, 4, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype="int8")
    ko = te.reduce_axis((0, 4), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C = te.compute(
        (1, 2, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A[bo, ko, bi, ki].astype("int32") * B[co, ko, ci, ki].astype("int32"), axis=[ko, ki]
        ),
        name="C",
    )
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, env.acc_scope)
    co_o, co_i = s[C].split(C.op.axis[1], factor=1)
    assert [s[C].axis_name(a) for a in (co_o, co_i)] == ["co.outer", "co.inner"]
    assert [iv.name for iv in s[CL].op.axis] == [iv.name for iv in C.op.axis]
    assert not set(s[CL].op.axis) & set(C.op.axis)


def test_missing_pragma_names_the_stage_and_the_pragma():
    env = vta.get_env()
    s, args = matrix_multiply(env, m=2, n=2)
    stage = s["B_buf"]
    stage.iter_attrs[stage.leaf_iter_vars[0]].pragmas.clear()
    with pytest.raises(VTATargetError, match=r"stage B_buf .* has no 'pragma dma_copy'"):
        vta.build(s, args)


def test_missing_alu_pragma_names_the_stage():
    env = vta.get_env()
    s, args, _ = conv2d(env, v_threads=1)
    st = s["res_max"]
    st.iter_attrs[st.leaf_iter_vars[0]].pragmas.clear()
    with pytest.raises(VTATargetError, match=r"stage res_max .* has no 'pragma alu'"):
        vta.build(s, args)


def test_gpu_thread_binding_is_refused_on_the_accelerator():
    env = vta.get_env()
    s, args = matrix_multiply(env, m=4, n=2)
    C = args[2]
    s[C].bind(s[C].op.axis[1], te.thread_axis("threadIdx.x"))
    with pytest.raises(VTATargetError, match="stage C: loop i1 is bound to the GPU axis thread"):
        vta.build(s, args)


def test_alu_errors_name_the_stage_the_user_wrote():
    env = vta.get_env()
    s, (data, kernel, res), _ = conv2d(env, v_threads=1)
    # res_shr is merged into res_conv's accumulator buffer; its error still names res_shr
    bad = s["res_shr"]
    op = bad.op
    from compiler.te.tensor import ComputeOp

    body = op.body.a // 3  # a division the ALU cannot do
    bad.op = ComputeOp(op.name, op.axis, op.reduce_axis, body, op.tag, op.attrs)
    with pytest.raises(VTATargetError, match="alu stage res_shr: .* divides"):
        vta.build(s, [data, kernel, res])


def test_missing_tensorize_names_the_stage_and_the_intrinsic():
    env = vta.get_env()
    s, args = matrix_multiply(env, m=2, n=2)
    stage = s["C_buf"]
    for attr in stage.iter_attrs.values():
        attr.tensorize = None
    with pytest.raises(VTATargetError, match=r"stage C_buf .* not tensorized.*env\.gemm"):
        vta.build(s, args)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_transposing_store_and_a_strided_load_are_one_transfer_each(preset):
    """Copy loops may play any DMA dimension: the output stored block-transposed
    (``out[co, bo]`` from ``C_buf[bo, co]``, whose SRAM side is contiguous along the outer
    loop) is one STORE of m strided one-entry rows per ``bo``, not one per block, and the
    weights are one LOAD per ``ko``."""
    env = vta.get_env(preset)
    m, n, o = 4, 2, 3
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(B.shape, lambda *i: B(*i), "B_buf")
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype)
            * B_buf[co, ko, ci, ki].astype(env.acc_dtype),
            axis=[ko, ki],
        ),
        name="C_buf",
    )
    C = te.compute(
        (m, o, env.BATCH, env.BLOCK_OUT),
        lambda co, bo, bi, ci: C_buf[bo, co, bi, ci].astype(env.inp_dtype),
        name="C",
    )
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    ax = s[C_buf].op.axis
    s[C_buf].reorder(ko, ax[0], ax[1], ax[2], ax[3], ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(ax[2], env.gemm)
    prog = vta.build(s, [A, B, C], env)
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, A.shape, dtype=np.int8)
    b = rng.integers(-128, 128, B.shape, dtype=np.int8)
    prog.write("A", a)
    prog.write("B", b)
    ref = np.einsum("okbi,mkci->ombc", a.astype(np.int32), b.astype(np.int32)).astype(np.int8)
    np.testing.assert_equal(run(prog).read("C"), ref.transpose((1, 0, 2, 3)))
    insns = prog.instructions()
    stores = [i for i in insns if i.opcode.name == "STORE" and i.x_size > 0]
    # out[co, bo] = acc[bo, co]: co (SRAM stride 1, DRAM stride o) is the rows; bo a host loop
    assert [(i.y_size, i.x_size, i.x_stride) for i in stores] == [(m, 1, o)] * o
    wgt = [i for i in insns if i.opcode.name == "LOAD" and i.memory_type == 1 and i.x_size > 0]
    assert [(i.y_size, i.x_size, i.x_stride) for i in wgt] == [(m, 1, n)] * n
