"""numpy references of the accelerator's layers: int8 inputs, int32 accumulation, then the same
shift, residual add, clip and cast as the requantize epilogue.

Example:
    >>> x = np.ones((1, 4, 3, 3), np.int8)
    >>> w = np.ones((4, 4, 3, 3), np.int8)
    >>> conv2d_reference(x, w, stride=1, pad=1, shift=1)[0, 0]
    array([[ 8, 12,  8],
           [12, 18, 12],
           [ 8, 12,  8]], dtype=int8)
"""

from __future__ import annotations

import numpy as np


def requantize(acc: np.ndarray, shift: int, relu: bool, residual: np.ndarray | None) -> np.ndarray:
    """int32 accumulators to int8: ``clip((acc >> shift) [+ residual])``."""
    acc = acc.astype(np.int64)
    # int32 arithmetic wraps like the accumulator
    acc = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)
    out = acc >> shift
    if residual is not None:
        out = out + residual.astype(np.int64)
        out = ((out + (1 << 31)) % (1 << 32)) - (1 << 31)
    return np.clip(out, 0 if relu else -128, 127).astype(np.int8)


def conv2d_reference(
    x: np.ndarray,
    w: np.ndarray,
    *,
    stride: int | tuple[int, int] = 1,
    pad: int | tuple[int, int, int, int] = 0,
    shift: int = 0,
    relu: bool = False,
    residual: np.ndarray | None = None,
) -> np.ndarray:
    """``x (N, C, H, W)`` int8 convolved with ``w (O, C, KH, KW)`` int8, requantized, NCHW
    int8. ``stride``: one for both axes or ``(rows, columns)``; ``pad``: the same on every side
    or ``(top, left, bottom, right)``.

    Example:
        >>> y = conv2d_reference(np.ones((1, 4, 5, 6), np.int8), np.ones((4, 4, 3, 1), np.int8),
        ...                      stride=(2, 1), pad=(1, 0, 1, 0))
        >>> y.shape, int(y[0, 0, 0, 0]), int(y[0, 0, 1, 0])
        ((1, 4, 3, 6), 8, 12)
    """
    n, c, h, wd = x.shape
    o, c2, kh, kw = w.shape
    assert c == c2, (x.shape, w.shape)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    pt, pl, pb, pr = (pad,) * 4 if isinstance(pad, int) else pad
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - kh) // sh + 1
    ow = (wd + pl + pr - kw) // sw + 1
    acc = np.zeros((n, o, oh, ow), np.int64)
    wl = w.astype(np.int64)
    for dy in range(kh):
        for dx in range(kw):
            win = xp[:, :, dy : dy + sh * oh : sh, dx : dx + sw * ow : sw]
            acc += np.einsum("nchw,oc->nohw", win, wl[:, :, dy, dx], optimize=True)
    return requantize(acc, shift, relu, residual)


def dense_reference(
    x: np.ndarray,
    w: np.ndarray,
    *,
    shift: int = 0,
    relu: bool = False,
    residual: np.ndarray | None = None,
) -> np.ndarray:
    """``x (N, K)`` int8 times ``w (M, K)`` int8 transposed, requantized, int8 ``(N, M)``."""
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    return requantize(acc, shift, relu, residual)
