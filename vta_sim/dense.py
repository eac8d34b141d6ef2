"""GEMM and ALU instructions run over dense blocks of the buffers, with the reference's meaning
(LOAD and STORE as flat copies, at the end of this module).

The reference kernels (:func:`isa.semantics.gemm_kernel`, :func:`isa.semantics.alu_kernel`)
decode the three loop indices of every micro-op and then work on one tile: a handful of MACs
or lanes per step of the loop nest (16 MACs for a 1×4×4 GEMM). Compiled programs keep their
micro-ops in runs: consecutive micro-ops whose accumulator index advances by one entry, whose
source index advances by a constant step (a convolution's stride) and whose weight index stays
put (one output row of a convolution against one kernel tap), and ALU loops that sweep a
contiguous range of entries. A run's GEMM is one (rows × block_in) · (block_in × block_out)
product against a single weight tile, and its ALU work is one sweep over contiguous lanes.

Exactness. The arithmetic is the reference's: int64 sums, each written back wrapped to int32,
``out`` taking the low 8 bits of every written value. ALU visits the loop nest in exactly the
reference's order (``i``, ``j``, then the micro-op list), lane by lane, so a source entry written
earlier in the same instruction is read updated, as in the reference. GEMM may visit it in
another order: every GEMM write adds to acc modulo 2**32 and inp/wgt are only read, so the final
acc does not depend on the order of the additions (nor does out, the low 8 bits of the last
write), whatever the overlaps between accumulator entries. The checks are the reference's own
(:func:`isa.semantics.gemm_check`, :func:`isa.semantics.alu_check`), asked first, so a faulty
instruction reports the same error and leaves the buffers untouched. A GEMM micro-op list with
no run longer than one micro-op gains nothing here and runs through the reference kernel.

The column path. A convolution's GEMM has a loop that leaves the source in place while the
accumulator and weight indices move (its output channel blocks, ``src_factor_out = 0`` or
``src_factor_in = 0``). Such a GEMM is one matrix product: rows are the accumulator entries its
other loops reach, K the weight tiles' block_in lanes, N the channel blocks' block_out lanes
side by side (:func:`_gemm_columns`). It is summed in float32, which is exact while no output
lane sums more than 2**10 int8 products (each at most 2**14 in magnitude, so every partial sum
is an integer below 2**24), in float64 past that bound, and added to acc once per entry with the
int32 wrap-around. The sum runs along the longer side: along rows over the inp values gathered
per weight tile (register-blocked four lanes by four K, for few channels), or along the lanes
with one multiply-add per micro-op's inp entry (many channels, few rows). On the ``default``
preset (1×4×4 tiles, 16 MACs per micro-op) it turns a GEMM's thousands of 16-MAC steps into one
product. When each step of its other loop has accumulator entries and weight tiles of its own
(one output row against its own taps), the one product would be block-diagonal, so each step is
its own product. With 16×16 tiles (block_in and the lanes multiples of 16) the sum runs along
the lanes in blocks of 16 instead, 16 inp values at a time (:func:`_rows16`, about 4 ns a row
of 256 MACs), over the rows that share a weight tile; past the float32 bound, a reduction loop
is summed in float32 chunks that each stay within it.

A GEMM without such a loop (both loops move the source: a convolution whose channel blocks are
in its micro-op list, or one reducing over input channel blocks in a loop) is the same product
with a single column of lanes, when its tiles are 16×16 and its weight tiles each meet enough
inp rows to pay for their panels (:func:`_gemm_rows`); otherwise, or past the size limit, it
takes the runs above.

Why numba loops and not BLAS: the event loop is one nopython function, so the work must be
something numba compiles; numba's ``np.dot`` reaches BLAS only through SciPy (not a dependency).
What costs is per-micro-op index decoding and loops LLVM cannot vectorize. So: flat buffers
indexed with unsigned integers (numba's wrap-around of negative signed indices is a select per
access that blocks vectorization), no array views in loops (a view costs about 100 ns), weights
held in locals so that stores cannot alias them (the 4×4 tile's 16 weights in the run path, 16
panel values in the column path), and short runs gathered into one long loop. Other tile shapes
in the run path take the generic loops (for 16×16 tiles the per-micro-op overhead was already
small beside the 256 MACs).

Example (a run of two micro-ops, then the same GEMM through the reference):
    >>> import numpy as np
    >>> from isa.semantics import gemm_kernel
    >>> rng = np.random.default_rng(0)
    >>> inp = rng.integers(-128, 128, (8, 1, 4)).astype(np.int8)
    >>> wgt = rng.integers(-128, 128, (4, 4, 4)).astype(np.int8)
    >>> uop = np.array([[0, 0, 1], [1, 1, 1]], np.int32)
    >>> args = (uop, 0, 0, 2, 3, 2, 2, 0, 2, 0, 1, 0)
    >>> a1, o1 = np.zeros((8, 1, 4), np.int32), np.zeros((8, 1, 4), np.int8)
    >>> a2, o2 = a1.copy(), o1.copy()
    >>> gemm(inp, wgt, a1, o1, *args), gemm_kernel(inp, wgt, a2, o2, *args)
    (0, 0)
    >>> bool((a1 == a2).all() and (o1 == o2).all())
    True
"""

from __future__ import annotations

import hashlib
import inspect
import sys

import numba
import numpy as np

from isa.semantics import NOTHING_TO_DO, OK

from . import kernels as _k

# Flat indices are unsigned inside the row loops: numba wraps a negative signed index around
# the array's end, a data-dependent select per access that keeps LLVM from vectorizing the loop;
# an unsigned index has no such case. (numba types uint64 + int64 as float64, hence the typed
# constants.)
_U1, _U2, _U3, _U4 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
_U16, _U32, _U48, _U64 = np.uint64(16), np.uint64(32), np.uint64(48), np.uint64(64)


@numba.njit
def _block_any(inp2, wgt, acc2, out2, w, x0, xstep, a0, n, reps, xrep, arep):
    """acc rows += inp rows times weight tile ``w`` transposed, and out = their low 8 bits, for
    ``reps`` blocks of ``n`` rows: row ``r`` of block ``p`` is acc row ``a0 + p·arep + r`` and
    inp row ``x0 + p·xrep + r·xstep`` (rows of ``inp2``/``acc2``/``out2``: one per batch entry
    of a buffer entry). Any tile shape.

    The loops are the reference kernel's (2-D row views with signed indices: for 16×16 tiles
    LLVM vectorizes this dot product better than the flat unsigned form of the 4×4 kernel).
    Each dot product is summed in int64 and stored wrapped to int32, as the reference does for
    one micro-op.
    """
    for p in range(reps):
        xb = x0 + p * xrep
        ab = a0 + p * arep
        for r in range(n):
            x = xb + r * xstep
            a = ab + r
            for o in range(acc2.shape[1]):
                s = np.int64(acc2[a, o])
                for c in range(inp2.shape[1]):
                    s += np.int64(inp2[x, c]) * np.int64(wgt[w, o, c])
                # storing the int64 sum truncates it: int32 wrap-around, and the low 8 bits
                # for out, exactly wrap32 and low8 of the reference
                acc2[a, o] = s
                out2[a, o] = s


@numba.njit
def _block_4x4(inpf, wgtf, accf, outf, w, x0, xstep, a0, n, reps, xrep, arep):
    """:func:`_block_any` for 4×4 tiles (the ``default`` and ``4x4x4`` presets).

    With the 16 weights held in locals, nothing stored in the row loop can alias them, and
    LLVM vectorizes the loop across rows; with run-time tile sizes the weights are reloaded
    after every store.
    """
    q = np.uint64(w * 16)
    w00, w01, w02, w03 = _tile_row(wgtf, q)
    w10, w11, w12, w13 = _tile_row(wgtf, q + _U4)
    w20, w21, w22, w23 = _tile_row(wgtf, q + np.uint64(8))
    w30, w31, w32, w33 = _tile_row(wgtf, q + np.uint64(12))
    xs = _U4 * np.uint64(xstep)
    for p in range(np.uint64(reps)):
        xb = _U4 * (np.uint64(x0) + p * np.uint64(xrep))
        ab = _U4 * (np.uint64(a0) + p * np.uint64(arep))
        for r in range(np.uint64(n)):
            a = ab + _U4 * r
            v0, v1, v2, v3 = _tile_row(inpf, xb + xs * r)
            s0 = accf[a] + v0 * w00 + v1 * w01 + v2 * w02 + v3 * w03
            s1 = accf[a + _U1] + v0 * w10 + v1 * w11 + v2 * w12 + v3 * w13
            s2 = accf[a + _U2] + v0 * w20 + v1 * w21 + v2 * w22 + v3 * w23
            s3 = accf[a + _U3] + v0 * w30 + v1 * w31 + v2 * w32 + v3 * w33
            accf[a], accf[a + _U1], accf[a + _U2], accf[a + _U3] = s0, s1, s2, s3
            outf[a], outf[a + _U1], outf[a + _U2], outf[a + _U3] = s0, s1, s2, s3


@numba.njit(inline="always")
def _tile_row(flat, q):
    """Four int8 values from ``flat[q]`` on (``q`` unsigned), widened to int64."""
    return (
        np.int64(flat[q]),
        np.int64(flat[q + _U1]),
        np.int64(flat[q + _U2]),
        np.int64(flat[q + _U3]),
    )


@numba.njit
def _gemm_block(
    inp, wgt, acc, out, inpf, wgtf, accf, outf, w, x0, xstep, a0, n, reps, xrep, arep, scratch
):
    """One block (see :func:`_block_any`) through the kernel for its tile shape.

    Blocks that continue one another (the next block starts where this one's rows end, in acc
    and inp) run as one longer block. For 4×4 tiles, blocks whose acc rows continue one another
    but whose inp rows do not (a convolution's output rows, each reading a window of a wider
    input row) have their inp rows copied one after the other into ``scratch`` first, so that
    the vectorized loop runs over all ``reps · n`` rows instead of ``reps`` short loops.
    """
    if reps > 1 and arep == n and xrep == n * xstep:
        n = n * reps
        reps = 1
    if inp.shape[2] == 4 and acc.shape[2] == 4:
        if reps > 1 and arep == n and reps * n * 4 <= scratch.shape[0]:
            t = np.uint64(0)
            for p in range(np.uint64(reps)):
                xb = np.uint64(x0) + p * np.uint64(xrep)
                for r in range(np.uint64(n)):
                    src = _U4 * (xb + r * np.uint64(xstep))
                    scratch[t] = inpf[src]
                    scratch[t + _U1] = inpf[src + _U1]
                    scratch[t + _U2] = inpf[src + _U2]
                    scratch[t + _U3] = inpf[src + _U3]
                    t += _U4
            _block_4x4(scratch, wgtf, accf, outf, w, 0, 1, a0, n * reps, 1, 0, 0)
        else:
            _block_4x4(inpf, wgtf, accf, outf, w, x0, xstep, a0, n, reps, xrep, arep)
    else:
        inp2 = inp.reshape(inp.shape[0] * inp.shape[1], inp.shape[2])
        acc2 = acc.reshape(acc.shape[0] * acc.shape[1], acc.shape[2])
        out2 = out.reshape(out.shape[0] * out.shape[1], out.shape[2])
        _block_any(inp2, wgt, acc2, out2, w, x0, xstep, a0, n, reps, xrep, arep)


@numba.njit
def _gemm_runs(uop, uop_begin, uop_end, batch, runs):
    """Split micro-ops [begin, end) into runs: dst steps by one, wgt stays, src steps by one
    constant ``≥ 0`` (by one when ``batch > 1``, so that a run's inp rows stay evenly spaced).
    Write each run's first micro-op, length and src step into ``runs``; return how many."""
    n = 0
    k = uop_begin
    while k < uop_end:
        length = 1
        step = 1
        if k + 1 < uop_end:
            step = uop[k + 1, 1] - uop[k, 1]
            if step < 0 or (batch > 1 and step != 1):
                step = 1
        while (
            k + length < uop_end
            and uop[k + length, 0] == uop[k, 0] + length
            and uop[k + length, 1] == uop[k, 1] + length * step
            and uop[k + length, 2] == uop[k, 2]
        ):
            length += 1
        runs[n, 0] = k
        runs[n, 1] = length
        runs[n, 2] = step
        n += 1
        k += length
    return n


@numba.njit
def _zero_entries(acc2, out2, uop, uop_begin, uop_end, iter_out, iter_in, dfo, dfi, batch):
    """Zero acc and out at every micro-op's accumulator entry (a reset), in coalesced spans."""
    lanes = acc2.shape[1]
    start = -1
    count = 0
    for i in range(iter_out):
        for j in range(iter_in):
            base = i * dfo + j * dfi
            for k in range(uop_begin, uop_end):
                a = uop[k, 0] + base
                if count > 0 and a == start + count:
                    count += 1
                    continue
                if count > 0:
                    acc2[start * batch : (start + count) * batch, :lanes] = 0
                    out2[start * batch : (start + count) * batch, :lanes] = 0
                start = a
                count = 1
    if count > 0:
        acc2[start * batch : (start + count) * batch, :lanes] = 0
        out2[start * batch : (start + count) * batch, :lanes] = 0


#: A float32 sum of int8 products is exact while every partial sum stays an integer within
#: 2**24: at most 2**10 products of magnitude at most 2**14 per output lane. A float64 sum is
#: exact up to 2**39 products.
_F32_TERMS = 1 << 10
_F64_TERMS = 1 << 39
#: The largest tile, weight panel or gathered input (elements) the column path builds; a GEMM
#: that would need more takes the run path (a compiled network's tiles are a few output rows of
#: all their channels, far below).
_COLUMNS_LIMIT = 1 << 20
#: A GEMM without a column loop (its lanes one tile's block_out, :func:`_gemm_rows`) takes
#: the product only when its weight tiles meet at least this many inp rows each on average: a
#: tile's panel (its transpose in floating point, about 70 ns for 16x16) is then paid back by
#: the faster sum (about 4 ns a row against 21 in the run path). Measured on 16x16
#: convolutions: 0.5x at two rows per tile, about even at six, 1.05-1.3x at eight, 1.5-1.75x at
#: 14, 2-3.5x at 28 and more.
_ROW_USES = 8
#: Products summed in floating point may be multiplied and added in one rounding: every
#: intermediate is an integer the format holds exactly, so the fused result is the same.
_CONTRACT = {"contract"}


@numba.njit
def _gemm_columns(
    inp,
    wgt,
    acc,
    out,
    uop,
    uop_begin,
    uop_end,
    n_col,
    col_dst,
    col_wgt,
    n_row,
    row_dst,
    row_src,
    row_wgt,
):
    """A GEMM whose column loop (``n_col`` steps of ``col_dst``, ``col_wgt``) leaves the source
    in place, as matrix products (:func:`_columns_part`): return False, with nothing written,
    when its matrices would exceed :data:`_COLUMNS_LIMIT` (the caller takes the run path).

    When every step of the other loop (``n_row`` steps of ``row_dst``, ``row_src``,
    ``row_wgt``) has accumulator entries and weight tiles of its own (a convolution's output
    rows, each against its own taps), one product over all of them is block-diagonal: a row of
    the gathered inp matrix is zero outside its step's weight tiles, and those zeros would be
    multiplied too. Such a GEMM runs as one product per step instead, when that product takes
    the row loop (the lane loop multiplies no zeros). The steps' products are translations of
    one another (the same rows, weight slots and sums per lane), so the first one's limits are
    every one's, and adding them one after the other is adding them at once (acc modulo 2**32).
    """
    batch = acc.shape[1]
    bi = inp.shape[2]
    lanes = n_col * acc.shape[2]
    n_uops = uop_end - uop_begin
    if n_uops == 1 and batch == 1 and (n_row == 1 or row_wgt != 0):
        return False  # one inp row per weight tile (see _columns_part), known without counting
    runs = np.empty((n_uops, 3), np.int64)
    n_runs = _gemm_runs(uop, uop_begin, uop_end, batch, runs)
    dlo, dhi, wlo, whi = _run_span(uop, runs, n_runs)
    # (int64: one compiled _columns_part for this caller and _gemm_rows)
    span = (np.int64(dlo), np.int64(dhi), np.int64(wlo), np.int64(whi))
    split = False
    if (
        n_row > 1
        and row_wgt != 0
        and abs(row_dst) > dhi - dlo
        and abs(row_wgt) > whi - wlo
        and not _blocked(bi, acc.shape[2], lanes)
    ):
        seen = np.zeros(whi - wlo + 1, np.bool_)
        n_slots = 0
        for q in range(n_runs):
            w = uop[runs[q, 0], 2] - wlo
            if not seen[w]:
                seen[w] = True
                n_slots += 1
        rows = (dhi - dlo + 1) * batch
        split = _by_rows(rows, lanes, n_slots * bi, 2 * n_uops * batch * bi)
    if not split:
        return _columns_part(inp, wgt, acc, out, uop, uop_begin, uop_end, n_col, col_dst,
                             col_wgt, np.int64(0), n_row, row_dst, row_src, row_wgt, runs,
                             n_runs, n_runs, span)  # fmt: skip
    for r in range(n_row):
        if not _columns_part(inp, wgt, acc, out, uop, uop_begin, uop_end, n_col, col_dst,
                             col_wgt, r, r + 1, row_dst, row_src, row_wgt, runs, n_runs,
                             n_runs, span):  # fmt: skip
            return False  # the first step's limits, so nothing is written yet
    return True


@numba.njit
def _run_span(uop, runs, n_runs):
    """The lowest and highest accumulator and weight index of the micro-ops of the first
    ``n_runs`` runs (:func:`_gemm_runs`: a run's weight is fixed, its accumulator entries
    consecutive)."""
    k = runs[0, 0]
    dlo, dhi, wlo, whi = uop[k, 0], uop[k, 0], uop[k, 2], uop[k, 2]
    for q in range(n_runs):
        k = runs[q, 0]
        dlo, dhi = min(dlo, uop[k, 0]), max(dhi, uop[k, 0] + runs[q, 1] - 1)
        wlo, whi = min(wlo, uop[k, 2]), max(whi, uop[k, 2])
    return dlo, dhi, wlo, whi


@numba.njit
def _gemm_rows(
    inp,
    wgt,
    acc,
    out,
    uop,
    uop_begin,
    uop_end,
    iter_out,
    iter_in,
    dst_factor_out,
    dst_factor_in,
    src_factor_out,
    src_factor_in,
    wgt_factor_out,
    wgt_factor_in,
):
    """A GEMM without a column loop (both loops move the source) as one product of
    :func:`_columns_part` with one column: the lanes are one tile's block_out, the rows the acc
    entries it writes, K its weight tiles' block_in lanes. Return False, with nothing written,
    when its weight tiles would meet too few inp rows (:data:`_ROW_USES`) or its matrices
    would exceed :data:`_COLUMNS_LIMIT` (the caller takes the run path).

    One loop stays a loop, the row loop of :func:`_columns_part`: the one that leaves the
    weight in place (the longer if both do), so that :func:`_sum_by_blocks` can run along it.
    The other's steps are written out as micro-ops, step after step (a table of n_uops × its
    steps): the column path's loops stay as they are (a second loop inside them cost the
    ``default`` preset's small GEMMs 5-10%), and a reduction over its steps can be summed in
    chunks of whole steps. Only for tiles that :func:`_sum_by_blocks` takes: with 4x4 tiles the
    run path is faster (its 4x4 kernel against panels of 16 values: 1.2 against 0.8 GMAC/s on
    the ``default`` preset's convolutions).
    """
    if wgt_factor_in == 0 and (wgt_factor_out != 0 or iter_in > iter_out):
        n_row, row_dst, row_src, row_wgt = iter_in, dst_factor_in, src_factor_in, wgt_factor_in
        n2, dst2, src2, wgt2 = iter_out, dst_factor_out, src_factor_out, wgt_factor_out
    else:
        n_row, row_dst, row_src, row_wgt = iter_out, dst_factor_out, src_factor_out, wgt_factor_out
        n2, dst2, src2, wgt2 = iter_in, dst_factor_in, src_factor_in, wgt_factor_in
    batch = acc.shape[1]
    n_uops = uop_end - uop_begin
    # known without counting: a loop that moves the weight has a tile of its own per step
    fewest = max(n2 if wgt2 != 0 else 1, n_row if row_wgt != 0 else 1)
    if n_uops * n_row * n2 * batch < _ROW_USES * fewest or 3 * n_uops * n2 > _COLUMNS_LIMIT:
        return False
    base = np.empty((n_uops, 3), np.int64)
    period = _gemm_runs(uop, uop_begin, uop_end, batch, base)
    table = np.empty((n_uops * n2, 3), uop.dtype)
    runs = np.empty((period * n2, 3), np.int64)
    for j in range(n2):
        for k in range(n_uops):
            table[j * n_uops + k, 0] = uop[uop_begin + k, 0] + j * dst2
            table[j * n_uops + k, 1] = uop[uop_begin + k, 1] + j * src2
            table[j * n_uops + k, 2] = uop[uop_begin + k, 2] + j * wgt2
        for q in range(period):
            runs[j * period + q, 0] = base[q, 0] - uop_begin + j * n_uops
            runs[j * period + q, 1] = base[q, 1]
            runs[j * period + q, 2] = base[q, 2]
    # the table's accumulator and weight ranges: the first step's, over the steps
    dlo, dhi, wlo, whi = _run_span(table, runs, period)
    last = (n2 - 1) * dst2
    dlo, dhi = dlo + min(0, last), dhi + max(0, last)
    last = (n2 - 1) * wgt2
    wlo, whi = wlo + min(0, last), whi + max(0, last)
    one, zero = np.int64(1), np.int64(0)
    return _columns_part(inp, wgt, acc, out, table, zero, table.shape[0], one, zero, zero, zero,
                         n_row, row_dst, row_src, row_wgt, runs, runs.shape[0], period,
                         (np.int64(dlo), np.int64(dhi), np.int64(wlo),
                          np.int64(whi)))  # fmt: skip


@numba.njit
def _blocked(bi, bo, lanes):
    """Whether a product sums through :func:`_sum_by_blocks`: block_in and block_out
    multiples of 16 (the ``vta-1x16x16`` preset's tiles), and at most 128 lanes. Wider rows
    (16 channel blocks of 16) sum faster along all their lanes four inp values at a time
    (:func:`_sum_by_lanes`, its loop long enough to vectorize: 73 against 49 GMAC/s on
    ResNet-18's last 3x3 convolutions); up to 8 channel blocks the blocks are faster (1.1x to
    3x on ResNet-18's and tuning candidates' convolutions)."""
    return bi % 16 == 0 and bo % 16 == 0 and lanes <= 128


@numba.njit
def _by_rows(rows, lanes, depth, filled):
    """Whether a product sums along M (:func:`_sum_by_rows`): unless rows are few against
    lanes (measured on compiled convolutions: the register-blocked row loop wins down to a
    quarter as many rows as lanes), and only when the gathered inp matrix (``depth`` × rows)
    is mostly filled (``filled``: twice its nonzero values; its zeros are multiplied too)."""
    return 16 <= rows and lanes < 4 * rows and depth * rows <= min(filled, _COLUMNS_LIMIT)


@numba.njit
def _columns_part(
    inp,
    wgt,
    acc,
    out,
    uop,
    uop_begin,
    uop_end,
    n_col,
    col_dst,
    col_wgt,
    r0,
    r1,
    row_dst,
    row_src,
    row_wgt,
    runs,
    n_runs,
    period,
    span,
):
    """Steps ``r0`` to ``r1`` of the other loop of :func:`_gemm_columns` as one matrix product:
    return False, with nothing written, when its matrices would exceed :data:`_COLUMNS_LIMIT`
    or when the weight panels would serve fewer than two inp rows each.
    ``runs``: the micro-ops' runs (:func:`_gemm_runs`), in steps of ``period`` runs each when
    the micro-op list is the steps of a loop written out (:func:`_gemm_rows`, else ``period =
    n_runs``); ``span``: their lowest and highest accumulator and weight index.

    Every micro-op of the other loop (steps of ``row_dst``, ``row_src``,
    ``row_wgt``) reads one inp entry ``s`` and adds, for every column step ``c``, its product
    with weight tile ``w + c·col_wgt`` to acc entry ``d + c·col_dst``. So each distinct ``w``
    (a slot) gets a panel of its ``n_col`` tiles side by side: block_in rows of
    n_col·block_out lanes, the product's K × N right-hand side. The product's rows (M) are the
    distinct ``d`` × batch. The sum runs along the longer of M and N, so that the vectorized
    loop is long whatever the shape: along N with one multiply-add of a micro-op's inp entry
    into its row (many channels, few rows), or along M over the inp entries gathered into a
    K × M matrix, four lanes at a time (when most of that matrix is filled).

    With 16x16 tiles and up to 8 channel blocks (:func:`_blocked`) the sum runs along N in
    blocks of 16 lanes (:func:`_sum_by_blocks`) on a panel laid out in such blocks, whatever
    the shape (measured faster than both sums above on every compiled convolution, 1.1x to
    3x).

    The product is summed in floating point, exactly (float32 when no lane sums more than
    :data:`_F32_TERMS` products, float64 otherwise), then added to acc with the reference's
    int32 wrap-around once per entry; out takes the low 8 bits, at exactly the entries the
    reference writes. A GEMM without a column loop (``n_col = 1``, :func:`_gemm_rows`) is
    refused unless its weight tiles meet :data:`_ROW_USES` inp rows each on average.
    """
    bi = inp.shape[2]
    bo = acc.shape[2]
    batch = acc.shape[1]
    lanes = n_col * bo
    dlo, dhi, wlo, whi = span
    first, last = r0 * row_dst, (r1 - 1) * row_dst
    dlo, dhi = dlo + min(first, last), dhi + max(first, last)
    first, last = r0 * row_wgt, (r1 - 1) * row_wgt
    wlo, whi = wlo + min(first, last), whi + max(first, last)
    rows = (dhi - dlo + 1) * batch
    if rows * lanes > _COLUMNS_LIMIT:
        return False
    # micro-ops come in runs (dst +1, src +step, wgt fixed): count, slot and gather per run
    count = np.zeros(dhi - dlo + 1, np.int64)
    slot = np.full(whi - wlo + 1, -1, np.int64)
    n_slots = 0
    for r in range(r0, r1):
        for q in range(n_runs):
            k = runs[q, 0]
            d = uop[k, 0] + r * row_dst - dlo
            for t in range(runs[q, 1]):
                count[d + t] += 1
            w = uop[k, 2] + r * row_wgt - wlo
            if slot[w] < 0:
                slot[w] = n_slots
                n_slots += 1
    depth = n_slots * bi
    if depth * lanes > _COLUMNS_LIMIT:
        return False
    if count.sum() * batch < 2 * n_slots:
        # each weight tile meets fewer than two inp rows: building its panel costs as much as
        # the product (a one-row GEMM of a convolution's channel blocks, 2.4 us against 0.9
        # us for 16x16 tiles through the reference kernel)
        return False
    blocked = _blocked(bi, bo, lanes)  # along N in blocks of 16 lanes and 16 inp values
    if n_col == 1 and count.sum() * batch < _ROW_USES * n_slots:
        return False  # no column loop: see _ROW_USES
    by_rows = not blocked and _by_rows(
        rows, lanes, depth, 2 * (r1 - r0) * (uop_end - uop_begin) * batch * bi
    )
    terms = count.max() * bi
    chunk = n_runs if terms <= _F32_TERMS else 0  # runs per float32 sum
    if blocked and chunk == 0 and period < n_runs:
        # Past the float32 bound, the steps of a loop written out as micro-ops (a reduction
        # over input channel blocks) are summed in chunks, each added to acc on its own.
        # Every step's rows are the first one's, translated: a chunk of c steps sums at most c
        # times the first step's most micro-ops into one row. (Each chunk adds to, and sets
        # out at, every entry the GEMM writes: adding zero leaves acc as it is.)
        first = np.zeros(dhi - dlo + 1, np.int64)
        for r in range(r0, r1):
            for q in range(period):
                d = uop[runs[q, 0], 0] + r * row_dst - dlo
                for t in range(runs[q, 1]):
                    first[d + t] += 1
        chunk = _F32_TERMS // (first.max() * bi) * period
    if chunk > 0:
        tile32 = _aligned(np.zeros(rows * lanes + 16, np.float32), rows * lanes)
        panel32 = _aligned(np.empty(depth * lanes + 16, np.float32), depth * lanes)
        _panels(wgt, slot, wlo, n_col, col_wgt, panel32, blocked)
        if blocked:
            for q0 in range(0, n_runs, chunk):
                if q0 > 0:
                    tile32[:] = 0
                q1 = min(q0 + chunk, n_runs)
                _sum_by_blocks(inp, uop, runs[q0:q1], r0, r1, row_dst, row_src, row_wgt, dlo,
                               wlo, slot, panel32, tile32, lanes)  # fmt: skip
                _columns_add(acc, out, count, dlo, n_col, col_dst, tile32, lanes, 1)
        elif by_rows:
            gathered32 = np.zeros(depth * rows, np.float32)
            _gather(inp, uop, runs, n_runs, r0, r1, row_dst, row_src, row_wgt, dlo, wlo, slot,
                    gathered32, rows)  # fmt: skip
            _sum_by_rows(gathered32, panel32, tile32, rows, lanes)
            _columns_add(acc, out, count, dlo, n_col, col_dst, tile32, 1, rows)
        else:
            _sum_by_lanes(inp, uop, uop_begin, uop_end, r0, r1, row_dst, row_src, row_wgt, dlo,
                          wlo, slot, panel32, tile32, lanes)  # fmt: skip
            _columns_add(acc, out, count, dlo, n_col, col_dst, tile32, lanes, 1)
    elif terms <= _F64_TERMS:
        tile64 = _aligned(np.zeros(rows * lanes + 8, np.float64), rows * lanes)
        panel64 = _aligned(np.empty(depth * lanes + 8, np.float64), depth * lanes)
        _panels(wgt, slot, wlo, n_col, col_wgt, panel64, blocked)
        if blocked:
            _sum_by_blocks(inp, uop, runs[:n_runs], r0, r1, row_dst, row_src, row_wgt, dlo, wlo,
                           slot, panel64, tile64, lanes)  # fmt: skip
        else:
            _sum_by_lanes(inp, uop, uop_begin, uop_end, r0, r1, row_dst, row_src, row_wgt, dlo,
                          wlo, slot, panel64, tile64, lanes)  # fmt: skip
        _columns_add(acc, out, count, dlo, n_col, col_dst, tile64, lanes, 1)
    else:
        return False
    return True


@numba.njit(inline="always")
def _aligned(buf, n):
    """The ``n`` elements of ``buf`` (64 bytes longer) from its first 64-byte boundary: the
    tile and the panels are read and written a 64-byte vector at a time, from multiples of 16
    lanes, and an array's data is only 16-byte aligned (numba's header before it): a vector
    across two cache lines made whole GEMMs 1.4x slower, depending on where malloc put them."""
    skip = (64 - buf.ctypes.data % 64) % 64 // buf.itemsize
    return buf[skip : skip + n]


@numba.njit
def _panels(wgt, slot, wlo, n_col, col_wgt, panel, blocked):
    """The weight panel of every slot: lane ``n = c·block_out + o`` of row ``ci`` is element
    ``(o, ci)`` of weight tile ``wlo + w + c·col_wgt``, at ``panel[(slot·block_in + ci)·N + n]``
    (N = n_col·block_out), or when ``blocked`` (block_out a multiple of 16, see
    :func:`_rows16`), in blocks of 16 lanes, each block's block_in rows after one another:
    ``panel[((slot·N/16 + n/16)·block_in + ci)·16 + n%16]``."""
    bo = wgt.shape[1]
    bi = wgt.shape[2]
    lanes = n_col * bo
    wgtf = wgt.reshape(-1)
    ubo, ubi = np.uint64(bo), np.uint64(bi)
    for w in range(slot.shape[0]):
        p = slot[w]
        if p < 0:
            continue
        for c in range(n_col):
            t = np.uint64((wlo + w + c * col_wgt) * bo * bi)
            if blocked:  # 16x16 blocks, in loops of fixed length
                for o0 in range(np.uint64(0), ubo, _U16):
                    qb = (np.uint64(p * lanes + c * bo) + o0) * ubi
                    for c0 in range(np.uint64(0), ubi, _U16):
                        for o in range(_U16):
                            q = qb + c0 * _U16 + o
                            x = t + (o0 + o) * ubi + c0
                            for ci in range(_U16):
                                panel[q + ci * _U16] = wgtf[x + ci]
                continue
            for ci in range(bi):
                q = np.uint64((p * bi + ci) * lanes + c * bo)
                for o in range(ubo):
                    panel[q + o] = wgtf[t + o * ubi + np.uint64(ci)]


@numba.njit(fastmath=_CONTRACT)
def _sum_by_lanes(
    inp,
    uop,
    uop_begin,
    uop_end,
    r0,
    r1,
    row_dst,
    row_src,
    row_wgt,
    dlo,
    wlo,
    slot,
    panel,
    tile,
    lanes,
):
    """tile[m·N + n] += the products of every micro-op into its row ``m`` (acc entry from
    ``dlo`` × batch), one multiply-add along N per four inp values."""
    bi = inp.shape[2]
    batch = inp.shape[1]
    ul = np.uint64(lanes)
    inpf = inp.reshape(-1)
    quads = bi - bi % 4
    for r in range(r0, r1):
        for k in range(uop_begin, uop_end):
            d = uop[k, 0] + r * row_dst - dlo
            s = uop[k, 1] + r * row_src
            p = slot[uop[k, 2] + r * row_wgt - wlo]
            for b in range(batch):
                row = np.uint64((d * batch + b) * lanes)
                x = np.uint64((s * batch + b) * bi)
                for c0 in range(0, quads, 4):
                    a0 = tile.dtype.type(inpf[x + np.uint64(c0)])
                    a1 = tile.dtype.type(inpf[x + np.uint64(c0 + 1)])
                    a2 = tile.dtype.type(inpf[x + np.uint64(c0 + 2)])
                    a3 = tile.dtype.type(inpf[x + np.uint64(c0 + 3)])
                    if a0 == 0 and a1 == 0 and a2 == 0 and a3 == 0:
                        continue  # zero activations (padding, ReLU) add nothing
                    q0 = np.uint64((p * bi + c0) * lanes)
                    q1 = q0 + ul
                    q2 = q1 + ul
                    q3 = q2 + ul
                    for t in range(ul):
                        tile[row + t] += (
                            a0 * panel[q0 + t] + a1 * panel[q1 + t] + a2 * panel[q2 + t]
                        ) + a3 * panel[q3 + t]
                for c in range(quads, bi):
                    a = tile.dtype.type(inpf[x + np.uint64(c)])
                    q = np.uint64((p * bi + c) * lanes)
                    for t in range(ul):
                        tile[row + t] += a * panel[q + t]


@numba.njit
def _sum_by_blocks(inp, uop, runs, r0, r1, row_dst, row_src, row_wgt, dlo, wlo, slot, panel,
                   tile, lanes):  # fmt: skip
    """:func:`_sum_by_lanes` for block_in and N multiples of 16, on a blocked panel
    (:func:`_panels`), through :func:`_rows16` over rows that share a weight tile: a run's
    micro-ops, or the steps of the row loop when it leaves the weight in place and is longer
    (a loop over output rows whose micro-ops are a convolution's taps and input channel blocks,
    each its own weight tile). ``runs``: the micro-ops' runs to sum (a chunk of them, see
    :func:`_columns_part`). The range of inp entries they read (at most the buffer: about 1 us
    for vta-1x16x16) is converted to the tile's type once, so that the kernel broadcasts them
    straight from memory."""
    bi = inp.shape[2]
    batch = inp.shape[1]
    n_runs = runs.shape[0]
    # the inp entries read, from the runs' first and last over the row loop
    slo, shi, longest = uop[runs[0, 0], 1], uop[runs[0, 0], 1], 1
    for q in range(n_runs):
        k = runs[q, 0]
        slo = min(slo, uop[k, 1])
        shi = max(shi, uop[k, 1] + (runs[q, 1] - 1) * runs[q, 2])
        longest = max(longest, runs[q, 1])
    first, last = r0 * row_src, (r1 - 1) * row_src
    slo, shi = slo + min(first, last), shi + max(first, last)
    width = batch * bi
    inpx = np.empty((shi - slo + 1) * width, tile.dtype)
    inpf = inp.reshape(-1)
    base = np.uint64(slo * width)
    for e in range(np.uint64(inpx.shape[0])):
        inpx[e] = inpf[base + e]
    if batch == 1 and row_wgt == 0 and row_dst >= 0 and row_src >= 0 and r1 - r0 > longest:
        # along the row loop: one micro-op's entries at its steps
        for k in range(runs[0, 0], runs[n_runs - 1, 0] + runs[n_runs - 1, 1]):
            d = uop[k, 0] + r0 * row_dst - dlo
            s = uop[k, 1] + r0 * row_src - slo
            p = slot[uop[k, 2] - wlo]
            _rows16(inpx, s, row_src, panel, p, tile, d, row_dst, r1 - r0, lanes, bi)
        return
    # along the runs: with a batch, a run's rows and inp rows follow one another
    one = np.int64(1)
    for r in range(r0, r1):
        for q in range(n_runs):
            k = runs[q, 0]
            d = uop[k, 0] + r * row_dst - dlo
            s = uop[k, 1] + r * row_src - slo
            p = slot[uop[k, 2] + r * row_wgt - wlo]
            step = runs[q, 2] if batch == 1 else one
            _rows16(inpx, s * batch, step, panel, p, tile, d * batch, one, runs[q, 1] * batch,
                    lanes, bi)  # fmt: skip


@numba.njit(fastmath=_CONTRACT)
def _rows16(inpx, x0, xs, panel, p, tile, m0, ms, n, lanes, bi):
    """``n`` tile rows from ``m0``, ``ms`` rows apart, += their inp rows (from ``x0``, ``xs``
    apart, in ``inpx``) times the blocked panel of slot ``p``.

    Each step of the loop over 16 lanes (one vector) sums 16 products of broadcast inp values
    with panel rows before one read-modify-write of the tile. The lane loop of
    :func:`_sum_by_lanes` runs scalar on a 16-lane row (LLVM vectorizes a loop of unknown
    length several vectors at a time) and reads back the lanes it just stored after every four
    inp values; here the lane loop has a fixed length and the panel rows a fixed stride (with a
    run-time stride, the check that the stores do not alias the panel sends the loop to its
    scalar version). A 16-lane row broadcasts its inp values from memory (the load ports then
    bound it, about 4 ns a row); a wider one loads them once and broadcasts them from
    registers for all its blocks (measured 1.6x slower than from memory for 16 lanes).
    Rows are not blocked by four to share the panel's loads: four rows' stores at run-time
    distances need more alias checks than LLVM makes, and the loop runs scalar.
    """
    ubi, ul = np.uint64(bi), np.uint64(lanes)
    uxs, ums = np.uint64(xs) * ubi, np.uint64(ms) * ul
    x, m = np.uint64(x0) * ubi, np.uint64(m0) * ul
    qp = np.uint64(p) * ul * ubi
    for _ in range(n):
        if ul == _U16:  # one block of lanes: inp values broadcast from memory
            for g in range(np.uint64(0), ubi, _U16):
                q = qp + g * _U16
                for t in range(_U16):
                    tile[m + t] += _dot16(inpx, x + g, panel, q, t)
            x += uxs
            m += ums
            continue
        for g in range(np.uint64(0), ubi, _U16):
            xg = x + g
            a0, a1, a2, a3 = inpx[xg], inpx[xg + _U1], inpx[xg + _U2], inpx[xg + _U3]
            xg += _U4
            a4, a5, a6, a7 = inpx[xg], inpx[xg + _U1], inpx[xg + _U2], inpx[xg + _U3]
            xg += _U4
            a8, a9, a10, a11 = inpx[xg], inpx[xg + _U1], inpx[xg + _U2], inpx[xg + _U3]
            xg += _U4
            a12, a13, a14, a15 = inpx[xg], inpx[xg + _U1], inpx[xg + _U2], inpx[xg + _U3]
            for n0 in range(np.uint64(0), ul, _U16):
                q = qp + n0 * ubi + g * _U16
                o = m + n0
                for t in range(_U16):
                    tile[o + t] += _tree16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11,
                                           a12, a13, a14, a15, panel, q, t)  # fmt: skip
        x += uxs
        m += ums


@numba.njit(fastmath=_CONTRACT, inline="always")
def _dot16(inpx, x, panel, q, t):
    """Lane ``t`` of 16 inp values from ``x`` times 16 panel rows from ``q`` (16 apart)."""
    x1, x2, x3, x4 = x + _U1, x + _U2, x + _U3, x + _U4
    x5, x6, x7, x8 = x1 + _U4, x2 + _U4, x3 + _U4, x4 + _U4
    x9, x10, x11, x12 = x5 + _U4, x6 + _U4, x7 + _U4, x8 + _U4
    x13, x14, x15 = x9 + _U4, x10 + _U4, x11 + _U4
    return _tree16(inpx[x], inpx[x1], inpx[x2], inpx[x3], inpx[x4], inpx[x5], inpx[x6],
                   inpx[x7], inpx[x8], inpx[x9], inpx[x10], inpx[x11], inpx[x12], inpx[x13],
                   inpx[x14], inpx[x15], panel, q, t)  # fmt: skip


@numba.njit(fastmath=_CONTRACT, inline="always")
def _tree16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, panel, q, t):
    """Lane ``t`` of the 16 values ``a0``..``a15`` times 16 panel rows from ``q`` (16 apart),
    summed as a tree (exact: every partial sum is an integer within the bound of its terms)."""
    q1, q2, q3, q4 = q + _U16, q + _U32, q + _U48, q + _U64
    q5, q6, q7, q8 = q1 + _U64, q2 + _U64, q3 + _U64, q4 + _U64
    q9, q10, q11, q12 = q5 + _U64, q6 + _U64, q7 + _U64, q8 + _U64
    q13, q14, q15 = q9 + _U64, q10 + _U64, q11 + _U64
    return (
        ((a0 * panel[q + t] + a1 * panel[q1 + t]) + (a2 * panel[q2 + t] + a3 * panel[q3 + t]))
        + ((a4 * panel[q4 + t] + a5 * panel[q5 + t]) + (a6 * panel[q6 + t] + a7 * panel[q7 + t]))
    ) + (
        ((a8 * panel[q8 + t] + a9 * panel[q9 + t])
         + (a10 * panel[q10 + t] + a11 * panel[q11 + t]))
        + ((a12 * panel[q12 + t] + a13 * panel[q13 + t])
           + (a14 * panel[q14 + t] + a15 * panel[q15 + t]))
    )  # fmt: skip


@numba.njit
def _gather(inp, uop, runs, n_runs, r0, r1, row_dst, row_src, row_wgt, dlo, wlo, slot, g, rows):
    """g[(slot·block_in + ci)·M + m] = the sum of the inp values every micro-op of row ``m``
    with that slot reads (M = rows of the tile; a product of a sum is the sum of the products,
    and every partial sum stays within the exact bound of its terms). A run of micro-ops fills
    consecutive rows: one strided copy per run and inp lane."""
    bi = inp.shape[2]
    batch = inp.shape[1]
    inpf = inp.reshape(-1)
    ubi = np.uint64(bi)
    # when the row loop continues the one run (a micro-op swept along a row), one longer run
    sweep = (
        n_runs == 1
        and row_wgt == 0
        and row_dst == runs[0, 1]
        and row_src == runs[0, 1] * (runs[0, 2] if batch == 1 else 1)
    )
    for r in range(r0, r0 + 1 if sweep else r1):
        for q in range(n_runs):
            k = runs[q, 0]
            m0 = (uop[k, 0] + r * row_dst - dlo) * batch
            x0 = (uop[k, 1] + r * row_src) * batch * bi
            p = slot[uop[k, 2] + r * row_wgt - wlo]
            length = runs[q, 1] * (r1 - r0 if sweep else 1)
            if batch == 1:
                n, xs = length, np.uint64(runs[q, 2] * bi)
            else:  # a run's src steps by one: its rows' inp lanes follow one another
                n, xs = length * batch, ubi
            if bi == 4:
                _gather4(g, inpf, np.uint64(p * 4 * rows + m0), np.uint64(rows),
                         np.uint64(x0), xs, np.uint64(n))  # fmt: skip
                continue
            for ci in range(bi):
                g0 = np.uint64((p * bi + ci) * rows + m0)
                x = np.uint64(x0 + ci)
                for t in range(np.uint64(n)):
                    g[g0 + t] += inpf[x + t * xs]


@numba.njit
def _gather4(g, inpf, g0, rows, x0, xs, n):
    """:func:`_gather`'s copy of one run for 4-lane inp entries: ``n`` entries ``xs`` lanes
    apart from ``x0``, lane ``ci`` added to ``g`` from ``g0 + ci·rows``. The four lanes of an
    entry are read together; entries that follow one another (a stride-1 convolution) are read
    as one interleaved group, which LLVM vectorizes (a runtime stride it does not)."""
    g1 = g0 + rows
    g2 = g1 + rows
    g3 = g2 + rows
    if xs == _U4:
        for t in range(n):
            x = x0 + _U4 * t
            g[g0 + t] += inpf[x]
            g[g1 + t] += inpf[x + _U1]
            g[g2 + t] += inpf[x + _U2]
            g[g3 + t] += inpf[x + _U3]
    else:
        for t in range(n):
            x = x0 + xs * t
            g[g0 + t] += inpf[x]
            g[g1 + t] += inpf[x + _U1]
            g[g2 + t] += inpf[x + _U2]
            g[g3 + t] += inpf[x + _U3]


@numba.njit(fastmath=_CONTRACT)
def _sum_by_rows(g, panel, tile, rows, lanes):
    """tile[n·M + m] = sum over k of panel[k·N + n] · g[k·M + m]: the product along M.

    Four lanes by four k at a time: the 16 panel values sit in locals (stored tile values
    cannot alias them), and each step of the vectorized row loop loads four g and four tile
    values for 16 multiply-adds. The lanes and k past a multiple of four go one at a time.
    """
    depth = g.shape[0] // rows
    um = np.uint64(rows)
    quads = depth - depth % 4
    lanes4 = lanes - lanes % 4
    for n0 in range(0, lanes4, 4):
        o0 = np.uint64(n0 * rows)
        o1 = o0 + um
        o2 = o1 + um
        o3 = o2 + um
        for k0 in range(0, quads, 4):
            q = k0 * lanes + n0
            b00, b01, b02, b03 = panel[q], panel[q + 1], panel[q + 2], panel[q + 3]
            q += lanes
            b10, b11, b12, b13 = panel[q], panel[q + 1], panel[q + 2], panel[q + 3]
            q += lanes
            b20, b21, b22, b23 = panel[q], panel[q + 1], panel[q + 2], panel[q + 3]
            q += lanes
            b30, b31, b32, b33 = panel[q], panel[q + 1], panel[q + 2], panel[q + 3]
            g0 = np.uint64(k0 * rows)
            g1 = g0 + um
            g2 = g1 + um
            g3 = g2 + um
            for m in range(um):
                x0, x1, x2, x3 = g[g0 + m], g[g1 + m], g[g2 + m], g[g3 + m]
                tile[o0 + m] += (b00 * x0 + b10 * x1) + (b20 * x2 + b30 * x3)
                tile[o1 + m] += (b01 * x0 + b11 * x1) + (b21 * x2 + b31 * x3)
                tile[o2 + m] += (b02 * x0 + b12 * x1) + (b22 * x2 + b32 * x3)
                tile[o3 + m] += (b03 * x0 + b13 * x1) + (b23 * x2 + b33 * x3)
    for n in range(lanes):
        out0 = np.uint64(n * rows)
        for k in range(quads if n < lanes4 else 0, depth):
            bk = panel[k * lanes + n]
            gk = np.uint64(k * rows)
            for m in range(um):
                tile[out0 + m] += bk * g[gk + m]


@numba.njit
def _add_interleaved4(accf, outf, tile, a, t0, uls, n_m):
    """acc entries from flat lane ``a`` (four lanes each) += four tile rows of ``n_m`` values
    from ``t0``, ``uls`` apart (lane ``o`` of entry ``m`` is ``tile[t0 + o·uls + m]``), with
    the int32 wrap-around; out = the low 8 bits. The four lanes are spelled out, so that the
    loop reads four contiguous tile rows and writes acc and out as interleaved groups, which
    LLVM vectorizes (a loop over the lanes inside would be a strided scatter per lane)."""
    t1 = t0 + uls
    t2 = t1 + uls
    t3 = t2 + uls
    for m in range(n_m):
        e = a + _U4 * m
        v0 = np.int64(accf[e]) + np.int64(tile[t0 + m])
        v1 = np.int64(accf[e + _U1]) + np.int64(tile[t1 + m])
        v2 = np.int64(accf[e + _U2]) + np.int64(tile[t2 + m])
        v3 = np.int64(accf[e + _U3]) + np.int64(tile[t3 + m])
        accf[e], accf[e + _U1], accf[e + _U2], accf[e + _U3] = v0, v1, v2, v3
        outf[e], outf[e + _U1], outf[e + _U2], outf[e + _U3] = v0, v1, v2, v3


@numba.njit
def _columns_add(acc, out, count, dlo, n_col, col_dst, tile, row_stride, lane_stride):
    """acc += the tile (element (m, n) at ``m·row_stride + n·lane_stride``) at every entry a
    micro-op wrote (int32 wrap-around), out = the low 8 bits. Written rows come in ranges;
    each range of each column step is one block of consecutive acc lanes."""
    bo = acc.shape[2]
    batch = acc.shape[1]
    accf = acc.reshape(-1)
    outf = out.reshape(-1)
    ubo = np.uint64(bo)
    urs, uls = np.uint64(row_stride), np.uint64(lane_stride)
    n_d = count.shape[0]
    d0 = 0
    while d0 < n_d:
        if count[d0] == 0:
            d0 += 1
            continue
        d1 = d0 + 1
        while d1 < n_d and count[d1] != 0:
            d1 += 1
        m0, n_m = np.uint64(d0 * batch), np.uint64((d1 - d0) * batch)
        for c in range(n_col):
            a = np.uint64((dlo + d0 + c * col_dst) * batch * bo)
            t0 = m0 * urs + np.uint64(c * bo) * uls
            if lane_stride == 1:
                for m in range(n_m):
                    for o in range(ubo):
                        e = a + m * ubo + o
                        v = np.int64(accf[e]) + np.int64(tile[t0 + m * urs + o])
                        accf[e] = v
                        outf[e] = v
            elif bo == 4 and row_stride == 1:
                _add_interleaved4(accf, outf, tile, a, t0, uls, n_m)
            else:
                for o in range(ubo):
                    for m in range(n_m):
                        e = a + m * ubo + o
                        v = np.int64(accf[e]) + np.int64(tile[t0 + m * urs + o * uls])
                        accf[e] = v
                        outf[e] = v
        d0 = d1


@numba.njit
def gemm(
    inp,
    wgt,
    acc,
    out,
    uop,
    reset,
    uop_begin,
    uop_end,
    iter_out,
    iter_in,
    dst_factor_out,
    dst_factor_in,
    src_factor_out,
    src_factor_in,
    wgt_factor_out,
    wgt_factor_in,
):
    """GEMM with the arguments and result of :func:`isa.semantics.gemm_kernel`."""
    code = _k.gemm_check(
        inp,
        wgt,
        acc,
        uop,
        reset,
        uop_begin,
        uop_end,
        iter_out,
        iter_in,
        dst_factor_out,
        dst_factor_in,
        src_factor_out,
        src_factor_in,
        wgt_factor_out,
        wgt_factor_in,
    )
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    batch = acc.shape[1]
    block_out = acc.shape[2]
    block_in = inp.shape[2]
    acc2 = acc.reshape(acc.shape[0] * batch, block_out)
    out2 = out.reshape(out.shape[0] * batch, block_out)
    if reset != 0:
        _zero_entries(
            acc2,
            out2,
            uop,
            uop_begin,
            uop_end,
            iter_out,
            iter_in,
            dst_factor_out,
            dst_factor_in,
            batch,
        )
        return OK
    # the column loop: one that leaves the source in place (channel blocks of a convolution)
    col_i = src_factor_out == 0 and iter_out > 1
    col_j = src_factor_in == 0 and iter_in > 1
    if col_i and (not col_j or iter_out >= iter_in):
        if _gemm_columns(inp, wgt, acc, out, uop, uop_begin, uop_end, iter_out, dst_factor_out,
                         wgt_factor_out, iter_in, dst_factor_in, src_factor_in,
                         wgt_factor_in):  # fmt: skip
            return OK
    elif col_j:
        if _gemm_columns(inp, wgt, acc, out, uop, uop_begin, uop_end, iter_in, dst_factor_in,
                         wgt_factor_in, iter_out, dst_factor_out, src_factor_out,
                         wgt_factor_out):  # fmt: skip
            return OK
    elif _blocked(block_in, block_out, block_out):
        # no column loop (with 4x4 tiles the run path is faster: see _gemm_rows)
        if _gemm_rows(inp, wgt, acc, out, uop, uop_begin, uop_end, iter_out, iter_in,
                      dst_factor_out, dst_factor_in, src_factor_out, src_factor_in,
                      wgt_factor_out, wgt_factor_in):  # fmt: skip
            return OK
    runs = np.empty((uop_end - uop_begin, 3), np.int64)
    n_runs = _gemm_runs(uop, uop_begin, uop_end, batch, runs)
    sweep = n_runs == 1 and dst_factor_in == 1 and src_factor_in == 1 and wgt_factor_in == 0
    if n_runs == uop_end - uop_begin and not sweep:
        return _k.gemm(
            inp,
            wgt,
            acc,
            out,
            uop,
            reset,
            uop_begin,
            uop_end,
            iter_out,
            iter_in,
            dst_factor_out,
            dst_factor_in,
            src_factor_out,
            src_factor_in,
            wgt_factor_out,
            wgt_factor_in,
        )
    inpf = inp.reshape(-1)
    wgtf = wgt.reshape(-1)
    accf = acc.reshape(-1)
    outf = out.reshape(-1)
    # Every write adds to acc modulo 2**32 and inp/wgt are only read, so the final acc (and out,
    # its low 8 bits) does not depend on the order of the micro-ops: when the weight index does
    # not move with j, a run is applied for all j at once (one block of iter_in row runs).
    inner = iter_in if wgt_factor_in == 0 else 1
    longest = 0
    for q in range(n_runs):
        longest = max(longest, runs[q, 1])
    scratch = np.empty(inner * longest * batch * block_in if inner > 1 else 0, np.int8)
    for i in range(iter_out):
        for j in range(0, iter_in, inner):
            da = i * dst_factor_out + j * dst_factor_in
            dx = i * src_factor_out + j * src_factor_in
            dw = i * wgt_factor_out + j * wgt_factor_in
            for q in range(n_runs):
                k = runs[q, 0]
                if batch == 1:
                    rows, xstep = runs[q, 1], runs[q, 2]
                else:
                    rows, xstep = runs[q, 1] * batch, 1
                _gemm_block(
                    inp,
                    wgt,
                    acc,
                    out,
                    inpf,
                    wgtf,
                    accf,
                    outf,
                    uop[k, 2] + dw,
                    (uop[k, 1] + dx) * batch,
                    xstep,
                    (uop[k, 0] + da) * batch,
                    rows,
                    inner,
                    src_factor_in * batch,
                    dst_factor_in * batch,
                    scratch,
                )
    return OK


_alu_apply = _k._SCOPE["alu_apply"]


@numba.njit
def _alu_span(accf, outf, op, use_imm, imm, p0, q0, m):
    """``m`` lanes from flat lane ``p0``: acc = op(acc, imm or the lane from ``q0``), in lane
    order (a source lane written earlier in the span is read updated, as in the reference).
    The opcode and operand kind are tested once per span, not once per lane, and lanes are
    indexed unsigned (see the top of this module), so that the immediate loops vectorize."""
    p0 = np.uint64(p0)
    q0 = np.uint64(q0)
    m = np.uint64(m)
    if use_imm != 0:
        y = np.int64(imm)
        if op == 0:
            for t in range(m):
                v = _alu_apply(0, np.int64(accf[p0 + t]), y)
                accf[p0 + t] = v
                outf[p0 + t] = v
        elif op == 1:
            for t in range(m):
                v = _alu_apply(1, np.int64(accf[p0 + t]), y)
                accf[p0 + t] = v
                outf[p0 + t] = v
        elif op == 2:
            for t in range(m):
                v = _alu_apply(2, np.int64(accf[p0 + t]), y)
                accf[p0 + t] = v
                outf[p0 + t] = v
        elif op == 3:
            for t in range(m):
                v = _alu_apply(3, np.int64(accf[p0 + t]), y)
                accf[p0 + t] = v
                outf[p0 + t] = v
        else:
            for t in range(m):
                v = _alu_apply(4, np.int64(accf[p0 + t]), y)
                accf[p0 + t] = v
                outf[p0 + t] = v
        return
    if m < 16:  # a few lanes (a strided source: pooling): no vector loops to set up
        for t in range(m):
            v = _alu_apply(op, np.int64(accf[p0 + t]), np.int64(accf[q0 + t]))
            accf[p0 + t] = v
            outf[p0 + t] = v
        return
    _alu_lanes(accf, outf, op, accf, p0, q0, m)


@numba.njit
def _alu_lanes(accf, outf, op, srcf, p0, q0, m):
    """``m`` lanes from flat lane ``p0``: acc = op(acc, the lane of ``srcf`` from ``q0``), in
    lane order (``srcf`` may be acc itself: a lane written earlier is read updated). One loop
    per opcode on purpose: with the opcode a constant in each, numba vectorizes the loop."""
    p0 = np.uint64(p0)
    q0 = np.uint64(q0)
    m = np.uint64(m)
    if op == 0:
        for t in range(m):
            v = _alu_apply(0, np.int64(accf[p0 + t]), np.int64(srcf[q0 + t]))
            accf[p0 + t] = v
            outf[p0 + t] = v
    elif op == 1:
        for t in range(m):
            v = _alu_apply(1, np.int64(accf[p0 + t]), np.int64(srcf[q0 + t]))
            accf[p0 + t] = v
            outf[p0 + t] = v
    elif op == 2:
        for t in range(m):
            v = _alu_apply(2, np.int64(accf[p0 + t]), np.int64(srcf[q0 + t]))
            accf[p0 + t] = v
            outf[p0 + t] = v
    elif op == 3:
        for t in range(m):
            v = _alu_apply(3, np.int64(accf[p0 + t]), np.int64(srcf[q0 + t]))
            accf[p0 + t] = v
            outf[p0 + t] = v
    else:
        for t in range(m):
            v = _alu_apply(4, np.int64(accf[p0 + t]), np.int64(srcf[q0 + t]))
            accf[p0 + t] = v
            outf[p0 + t] = v


@numba.njit
def alu(
    acc,
    out,
    uop,
    reset,
    uop_begin,
    uop_end,
    iter_out,
    iter_in,
    dst_factor_out,
    dst_factor_in,
    src_factor_out,
    src_factor_in,
    alu_opcode,
    use_imm,
    imm,
):
    """ALU with the arguments and result of :func:`isa.semantics.alu_kernel`.

    Consecutive steps of the loop nest whose accumulator entries (and, for a register operand,
    source entries) follow one another form one span of lanes, applied in order.
    """
    code = _k.alu_check(
        acc,
        uop,
        reset,
        uop_begin,
        uop_end,
        iter_out,
        iter_in,
        dst_factor_out,
        dst_factor_in,
        src_factor_out,
        src_factor_in,
        alu_opcode,
        use_imm,
    )
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    batch = acc.shape[1]
    block_out = acc.shape[2]
    if reset != 0:
        acc2 = acc.reshape(acc.shape[0] * batch, block_out)
        out2 = out.reshape(out.shape[0] * batch, block_out)
        _zero_entries(
            acc2,
            out2,
            uop,
            uop_begin,
            uop_end,
            iter_out,
            iter_in,
            dst_factor_out,
            dst_factor_in,
            batch,
        )
        return OK
    lanes = batch * block_out
    accf = acc.reshape(-1)
    outf = out.reshape(-1)
    # Micro-ops that form one run (dst and src each stepping by one) need no search for spans:
    # each (i, j) is a span of the run's length, and all j of one i are one span when the
    # inner loop steps by that length. (Applying consecutive spans in order is applying their
    # union in lane order, so any such split gives the same result.)
    length = uop_end - uop_begin
    one_run = True
    for k in range(uop_begin + 1, uop_end):
        if uop[k, 0] != uop[k - 1, 0] + 1 or (use_imm == 0 and uop[k, 1] != uop[k - 1, 1] + 1):
            one_run = False
            break
    if one_run:
        merge_j = dst_factor_in == length and (use_imm != 0 or src_factor_in == length)
        # one source span for every j (a per-channel operand broadcast over a row)
        broadcast = use_imm == 0 and src_factor_in == 0 and dst_factor_in == length
        period = length * lanes
        tiled = np.empty(period * iter_in if broadcast and not merge_j else 0, acc.dtype)
        for i in range(iter_out):
            a = uop[uop_begin, 0] + i * dst_factor_out
            x = uop[uop_begin, 1] + i * src_factor_out
            if merge_j:
                n = length * iter_in * lanes
                _alu_span(accf, outf, alu_opcode, use_imm, imm, a * lanes, x * lanes, n)
                continue
            if broadcast and (x + length <= a or x >= a + length * iter_in):
                # the source lies outside this i's destinations, so it is the same for every
                # j: laid out once per j, the whole row is one vectorized span
                up, ux = np.uint64(period), np.uint64(x * lanes)
                for j in range(np.uint64(iter_in)):
                    for t in range(up):
                        tiled[j * up + t] = accf[ux + t]
                _alu_lanes(accf, outf, alu_opcode, tiled, a * lanes, 0, tiled.shape[0])
                continue
            for j in range(iter_in):
                _alu_span(
                    accf,
                    outf,
                    alu_opcode,
                    use_imm,
                    imm,
                    (a + j * dst_factor_in) * lanes,
                    (x + j * src_factor_in) * lanes,
                    length * lanes,
                )
        return OK
    start = -1  # first entry of the pending span, its source entry and its length
    src = -1
    count = 0
    for i in range(iter_out):
        for j in range(iter_in):
            da = i * dst_factor_out + j * dst_factor_in
            dx = i * src_factor_out + j * src_factor_in
            for k in range(uop_begin, uop_end):
                a = uop[k, 0] + da
                x = uop[k, 1] + dx
                if count > 0 and a == start + count and (use_imm != 0 or x == src + count):
                    count += 1
                    continue
                if count > 0:
                    _alu_span(
                        accf,
                        outf,
                        alu_opcode,
                        use_imm,
                        imm,
                        start * lanes,
                        src * lanes,
                        count * lanes,
                    )
                start = a
                src = x
                count = 1
    if count > 0:
        _alu_span(accf, outf, alu_opcode, use_imm, imm, start * lanes, src * lanes, count * lanes)
    return OK


# ---- LOAD and STORE ----------------------------------------------------------------------
# The reference kernels copy and zero with slice assignments, four array views a row (about
# 100 ns each in nopython code); a convolution's small LOADs (two rows of three 16-byte
# entries) spent most of their time there. The same bytes are moved here in flat loops over
# unsigned indices, and empty zero fills are skipped.


@numba.njit(inline="always")
def _zero(buf, start, n):
    for k in range(n):
        buf[start + k] = 0


@numba.njit(inline="always")
def _copy(dst, d0, src, s0, n):
    for k in range(n):
        dst[d0 + k] = src[s0 + k]


@numba.njit
def load(
    sram, elem_bytes, dram, sram_base, dram_base, y_size, x_size, x_stride, y_pad_0, y_pad_1,
    x_pad_0, x_pad_1,
):  # fmt: skip
    """LOAD with the arguments and result of :func:`isa.semantics.load_kernel`."""
    code = _k.load_check(sram, elem_bytes, dram, sram_base, dram_base, y_size, x_size,
                         x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1)  # fmt: skip
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    eb = np.uint64(elem_bytes)
    width = np.uint64(x_pad_0 + x_size + x_pad_1) * eb
    head = np.uint64(x_pad_0) * eb
    body = np.uint64(x_size) * eb
    tail = np.uint64(x_pad_1) * eb
    stride = np.uint64(x_stride) * eb
    top = np.uint64(sram_base) * eb
    if y_pad_0 > 0:
        _zero(sram, top, np.uint64(y_pad_0) * width)
    row = top + np.uint64(y_pad_0) * width
    src = np.uint64(dram_base) * eb
    for _ in range(y_size):
        if head > 0:
            _zero(sram, row, head)
        _copy(sram, row + head, dram, src, body)
        if tail > 0:
            _zero(sram, row + head + body, tail)
        row += width
        src += stride
    if y_pad_1 > 0:
        _zero(sram, row, np.uint64(y_pad_1) * width)
    return OK


@numba.njit
def store(sram, elem_bytes, dram, sram_base, dram_base, y_size, x_size, x_stride, pad_sum):
    """STORE with the arguments and result of :func:`isa.semantics.store_kernel`."""
    code = _k.store_check(sram, elem_bytes, dram, sram_base, dram_base, y_size, x_size,
                          x_stride, pad_sum)  # fmt: skip
    if code != OK:
        return OK if code == NOTHING_TO_DO else code
    eb = np.uint64(elem_bytes)
    body = np.uint64(x_size) * eb
    stride = np.uint64(x_stride) * eb
    src = np.uint64(sram_base) * eb
    dst = np.uint64(dram_base) * eb
    for _ in range(y_size):
        _copy(dram, dst, sram, src, body)
        src += body
        dst += stride
    return OK


def _source_stamp() -> int:
    """A 60-bit hash of the kernels' stamp and this file: the event loop's cache key."""
    h = hashlib.sha256(str(_k.SOURCE_STAMP).encode())
    h.update(inspect.getsource(sys.modules[__name__]).encode())
    return int(h.hexdigest()[:15], 16)


#: Changes whenever a source compiled into the event loop besides its own file changes.
SOURCE_STAMP = _source_stamp()
