"""numpy references for the operator tests."""

from __future__ import annotations

import numpy as np


def conv2d_nchw(x, w, stride, pads, dilation, groups, acc):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    pt, pl, pb, pr = pads
    dh, dw = dilation
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))).astype(acc)
    wa = w.astype(acc)
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), acc)
    opg = o // groups
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[
                :,
                :,
                ky * dh : ky * dh + sh * (oh - 1) + 1 : sh,
                kx * dw : kx * dw + sw * (ow - 1) + 1 : sw,
            ]
            for g in range(groups):
                out[:, g * opg : (g + 1) * opg] += np.einsum(
                    "nchw,oc->nohw",
                    patch[:, g * cg : (g + 1) * cg],
                    wa[g * opg : (g + 1) * opg, :, ky, kx],
                )
    return out


def pool2d(x, kernel, stride, pads, kind, count_include_pad=True):
    n, c, h, w = x.shape[:4]
    kh, kw = kernel
    sh, sw = stride
    pt, pl, pb, pr = pads
    extra = [(0, 0)] * (x.ndim - 4)
    if kind == "max":
        fill = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        fill = -np.inf if x.dtype.kind == "f" else fill
    else:
        fill = 0
    acc = x.dtype if kind == "max" or x.dtype.kind == "f" else np.int32
    xp = np.pad(x.astype(acc), [(0, 0), (0, 0), (pt, pb), (pl, pr)] + extra, constant_values=fill)
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    out = np.zeros((n, c, oh, ow) + x.shape[4:], acc)
    for y in range(oh):
        for xx in range(ow):
            win = xp[:, :, y * sh : y * sh + kh, xx * sw : xx * sw + kw]
            if kind == "max":
                out[:, :, y, xx] = win.max(axis=(2, 3))
            else:
                s = win.sum(axis=(2, 3), dtype=acc)
                if count_include_pad:
                    cnt = kh * kw
                else:
                    y0, x0 = y * sh - pt, xx * sw - pl
                    cnt = (min(y0 + kh, h) - max(y0, 0)) * (min(x0 + kw, w) - max(x0, 0))
                out[:, :, y, xx] = s / cnt if x.dtype.kind == "f" else s // cnt
    return out.astype(x.dtype)
