"""NCHW / OIHW / (N, K) arrays to the accelerator's packed layouts and back (zero padding of
the batch and channel axes up to the config's blocks).

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> x = np.arange(2 * 3 * 2 * 2, dtype=np.int8).reshape(2, 3, 2, 2)
    >>> p = pack_nchw(x, cfg)
    >>> p.shape, bool((unpack_nchw(p, 2, 3) == x).all())
    ((2, 1, 2, 2, 1, 4), True)
"""

from __future__ import annotations

import numpy as np

from isa import HwConfig


def _pad_to(a: np.ndarray, axis: int, block: int) -> np.ndarray:
    extra = -a.shape[axis] % block
    if not extra:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, extra)
    return np.pad(a, widths)


#: The block layouts of :func:`pack_blocks` (the graph's ``pack`` operator): ``nchw``: ``(N, C,
#: H, W)`` to ``(N/b, C/c, H, W, b, c)``; ``rows``: ``(N, K)`` to ``(N/b, K/c, b, c)``;
#: ``batch_rows``: ``(..., T, K)`` to ``(B, T/b, K/c, b, c)``, the rows of every matrix of a
#: batch of matrices, the leading axes flattened into ``B``; ``batch_weight``: ``(..., K, N)``
#: to ``(B, N/b, K/c, b, c)``, every matrix transposed into the weight layout (the right
#: operand of a matmul). ``(b, c)`` are the ``blocks``; the blocked axes are zero padded.
BLOCK_LAYOUTS = ("nchw", "rows", "batch_rows", "batch_weight")


def pack_blocks(x: np.ndarray, layout: str, blocks: tuple[int, int]) -> np.ndarray:
    """``x`` in block layout ``layout`` (:data:`BLOCK_LAYOUTS`) with ``blocks`` ``(b, c)``.

    Example:
        >>> x = np.arange(2 * 3 * 5, dtype=np.int8).reshape(2, 3, 5)
        >>> p = pack_blocks(x, "batch_weight", (4, 4))
        >>> p.shape, bool((unpack_blocks(p, "batch_weight", x.shape) == x).all())
        ((2, 2, 1, 4, 4), True)
    """
    b, c = blocks
    if layout == "nchw":
        x = _pad_to(_pad_to(x, 0, b), 1, c)
        n, ch, h, w = x.shape
        p = x.reshape(n // b, b, ch // c, c, h, w)
        return np.ascontiguousarray(p.transpose(0, 2, 4, 5, 1, 3))
    if layout == "rows":
        x = _pad_to(_pad_to(x, 0, b), 1, c)
        n, k = x.shape
        return np.ascontiguousarray(x.reshape(n // b, b, k // c, c).transpose(0, 2, 1, 3))
    if layout not in ("batch_rows", "batch_weight"):
        raise ValueError(f"block layout {layout!r} is not one of {BLOCK_LAYOUTS}")
    if x.ndim < 2:
        raise ValueError(f"a batch of matrices has 2 axes or more, got shape {x.shape}")
    flat = x.reshape(-1, *x.shape[-2:])
    if layout == "batch_weight":
        flat = flat.transpose(0, 2, 1)  # (B, N, K): each matrix's columns as rows
    flat = _pad_to(_pad_to(flat, 1, b), 2, c)
    nb, t, k = flat.shape
    p = flat.reshape(nb, t // b, b, k // c, c)
    return np.ascontiguousarray(p.transpose(0, 1, 3, 2, 4))


def unpack_blocks(p: np.ndarray, layout: str, shape: tuple[int, ...]) -> np.ndarray:
    """The value of ``shape`` that :func:`pack_blocks` packed into ``p`` (the padding
    dropped)."""
    if layout == "nchw":
        return unpack_nchw(p, shape[0], shape[1])
    if layout == "rows":
        return unpack_rows(p, shape[0], shape[1])
    if layout == "batch_rows":
        return unpack_batch_rows(p, shape)
    if layout != "batch_weight":
        raise ValueError(f"block layout {layout!r} is not one of {BLOCK_LAYOUTS}")
    k, n = shape[-2:]
    cols = unpack_batch_rows(p, (p.shape[0], n, k))  # (B, N, K)
    return np.ascontiguousarray(cols.transpose(0, 2, 1).reshape(shape))


def pack_nchw(x: np.ndarray, cfg: HwConfig) -> np.ndarray:
    """``(N, C, H, W)`` to ``(N/b, C/bi, H, W, b, bi)``."""
    return pack_blocks(x, "nchw", (cfg.batch, cfg.block_in))


def pack_nchw_out(x: np.ndarray, cfg: HwConfig) -> np.ndarray:
    """``(N, C, H, W)`` to the output layout ``(N/b, C/bo, H, W, b, bo)`` (a residual)."""
    return pack_blocks(x, "nchw", (cfg.batch, cfg.block_out))


def unpack_nchw(p: np.ndarray, n: int, c: int) -> np.ndarray:
    """``(N/b, C/bo, H, W, b, bo)`` to ``(n, c, H, W)``."""
    nb, cb, h, w, b, bo = p.shape
    return np.ascontiguousarray(
        p.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * bo, h, w)[:n, :c]
    )


def pack_kernel(w: np.ndarray, cfg: HwConfig) -> np.ndarray:
    """``(O, C, KH, KW)`` to ``(O/bo, C/bi, KH, KW, bo, bi)``.

    Example:
        >>> import isa
        >>> pack_kernel(np.ones((6, 3, 3, 3), np.int8), isa.load_config("default")).shape
        (2, 1, 3, 3, 4, 4)
    """
    w = _pad_to(_pad_to(w, 0, cfg.block_out), 1, cfg.block_in)
    o, c, kh, kw = w.shape
    p = w.reshape(o // cfg.block_out, cfg.block_out, c // cfg.block_in, cfg.block_in, kh, kw)
    return np.ascontiguousarray(p.transpose(0, 2, 4, 5, 1, 3))


def pack_rows(x: np.ndarray, cfg: HwConfig, *, out: bool = False) -> np.ndarray:
    """``(N, K)`` to ``(N/b, K/bi, b, bi)`` (``(N/b, K/bo, b, bo)`` with ``out``)."""
    return pack_blocks(x, "rows", (cfg.batch, cfg.block_out if out else cfg.block_in))


def unpack_rows(p: np.ndarray, n: int, m: int) -> np.ndarray:
    """``(N/b, M/bo, b, bo)`` to ``(n, m)``."""
    nb, mb, b, bo = p.shape
    return np.ascontiguousarray(p.transpose(0, 2, 1, 3).reshape(nb * b, mb * bo)[:n, :m])


def pack_weight(w: np.ndarray, cfg: HwConfig) -> np.ndarray:
    """``(M, K)`` to ``(M/bo, K/bi, bo, bi)``.

    Example:
        >>> import isa
        >>> pack_weight(np.ones((10, 6), np.int8), isa.load_config("default")).shape
        (3, 2, 4, 4)
    """
    w = _pad_to(_pad_to(w, 0, cfg.block_out), 1, cfg.block_in)
    m, k = w.shape
    p = w.reshape(m // cfg.block_out, cfg.block_out, k // cfg.block_in, cfg.block_in)
    return np.ascontiguousarray(p.transpose(0, 2, 1, 3))


def pack_batch_rows(x: np.ndarray, cfg: HwConfig, *, out: bool = False) -> np.ndarray:
    """``(..., T, K)`` to ``(B, T/b, K/bi, b, bi)`` (``(B, T/b, K/bo, b, bo)`` with ``out``):
    the rows of every matrix of a batch of matrices, the leading axes flattened into ``B``.

    Example:
        >>> import isa
        >>> pack_batch_rows(np.ones((1, 8, 5, 6), np.int8), isa.load_config("default")).shape
        (8, 5, 2, 1, 4)
    """
    return pack_blocks(x, "batch_rows", (cfg.batch, cfg.block_out if out else cfg.block_in))


def pack_batch_weight(x: np.ndarray, cfg: HwConfig) -> np.ndarray:
    """``(..., K, N)`` (the right operand of a matmul) to ``(B, N/bo, K/bi, bo, bi)``: every
    matrix transposed into the weight layout, the leading axes flattened into ``B``.

    Example:
        >>> import isa
        >>> pack_batch_weight(np.ones((2, 3, 6, 5), np.int8), isa.load_config("default")).shape
        (6, 2, 2, 4, 4)
    """
    return pack_blocks(x, "batch_weight", (cfg.block_out, cfg.block_in))


def unpack_batch_rows(p: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``(B, T/b, N/bo, b, bo)`` to ``shape`` ``(..., T, N)`` (``B`` the product of its
    leading axes)."""
    batch, tb, nb, b, bo = p.shape
    rows = p.transpose(0, 1, 3, 2, 4).reshape(batch, tb * b, nb * bo)
    return np.ascontiguousarray(rows[:, : shape[-2], : shape[-1]].reshape(shape))


__all__ = [
    "BLOCK_LAYOUTS",
    "pack_batch_rows",
    "pack_batch_weight",
    "pack_blocks",
    "pack_kernel",
    "pack_nchw",
    "pack_nchw_out",
    "pack_rows",
    "pack_weight",
    "unpack_batch_rows",
    "unpack_blocks",
    "unpack_nchw",
    "unpack_rows",
]
