"""Folding a convolution's input into channels: both rewrites (the ``im2col`` operator with
the fold's window, and the folded weights) give the direct convolution's integers, and the
chooser takes the fewest GEMM micro-ops per output entry."""

import numpy as np
import pytest

import isa
from compiler.graph.reference import im2col
from compiler.topi.vta.fold import choose_fold, direct_uops


def _conv(x: np.ndarray, w: np.ndarray, stride: int, padding: tuple[int, int, int, int]):
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, _, kh, kw = w.shape
    oh = (xp.shape[2] - kh) // stride + 1
    ow = (xp.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], o, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            tap = xp[:, :, ky : ky + stride * oh : stride, kx : kx + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", tap, w[:, :, ky, kx].astype(np.int64))
    return out


@pytest.mark.parametrize("config", ["default", "vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize(
    ("in_c", "k", "stride", "pad", "hw"),
    [(3, 7, 2, 3, 17), (1, 5, 1, 2, 9), (1, 4, 2, 1, 10), (2, 3, 2, 0, 11), (3, 3, 1, 1, 8)],
)
def test_a_chosen_fold_computes_the_direct_convolution(config, in_c, k, stride, pad, hw):
    cfg = isa.load_config(config)
    rng = np.random.default_rng(in_c * 100 + k * 10 + stride)
    x = rng.integers(-128, 128, (2, in_c, hw, hw)).astype(np.int8)
    w = rng.integers(-127, 128, (5, in_c, k, k)).astype(np.int8)
    padding = (pad,) * 4
    expected = _conv(x, w, stride, padding)
    out_hw = expected.shape[2:]
    fold = choose_fold(cfg, in_c=in_c, k=k, stride=stride, out_hw=out_hw)
    # every case has fewer channels than a block: some fold always needs fewer micro-ops
    assert fold is not None and fold.uops_per_entry < direct_uops(cfg, in_c, k)
    xf = im2col(x, fold.window, stride, padding[:2], fold.in_hw)
    wf = fold.weight(w)
    assert xf.shape[1] == wf.shape[1] == fold.in_c and xf.shape[2:] == fold.in_hw
    np.testing.assert_array_equal(_conv(xf, wf, 1, (0, 0, 0, 0)), expected)


def test_resnet_first_layer_folds_to_ten_blocks_on_vta_1x16x16():
    cfg = isa.load_config("vta-1x16x16")
    fold = choose_fold(cfg, in_c=3, k=7, stride=2, out_hw=(112, 112))
    assert fold is not None and (fold.kind, fold.uops_per_entry) == ("im2col", 10)
    # 64 channels already fill the blocks: no fold
    assert choose_fold(cfg, in_c=64, k=3, stride=2, out_hw=(28, 28)) is None


def test_im2col_keeps_the_padding_zero():
    x = np.full((1, 1, 3, 3), 7, np.int8)
    cols = im2col(x, 3, 1, (1, 1), (3, 3))
    assert cols.shape == (1, 9, 3, 3)
    assert cols[0, :, 0, 0].tolist() == [0, 0, 0, 0, 7, 7, 0, 7, 7]
