"""Folding a convolution with few input channels into channels, so the reduction fills the
GEMM core's ``block_in``-wide blocks.

A direct packed convolution pads the input channels up to a whole block and runs one micro-op
per block per kernel tap: ResNet's first layer (3 channels, 7x7, stride 2) on a 16-wide core
does ``49`` micro-ops per output entry where its ``147`` products fill ``10`` blocks. Two
rewrites, each an ``im2col`` node on the host and a convolution over the folded channels
(:mod:`compiler.targets.vta.host_steps`), give the same integers with fewer micro-ops:

* ``space_to_depth`` (:func:`compiler.topi.vta.qnn.space_to_depth_factor`): the stride is
  folded into channels, a stride-1 convolution with a ``ceil(k/s)`` kernel over ``c*s*s``
  channels (ResNet's first layer: 16 micro-ops per entry);
* ``im2col``: every kernel tap is folded into channels, a 1x1 convolution over ``c*k*k``
  channels of the output's size (ResNet's first layer: 10 micro-ops per entry). The host
  writes each pixel's whole window: ``k*k/(s*s)`` times the input's bytes (12x for ResNet),
  which the load module moves under the GEMM work.

:func:`choose_fold` takes the rewrite with the fewest GEMM micro-ops per output entry; a tie
keeps the one that moves fewer bytes (direct, then space to depth, then im2col).

Example:
    >>> import isa
    >>> cfg = isa.load_config("vta-1x16x16")
    >>> f = choose_fold(cfg, in_c=3, k=7, stride=2, out_hw=(112, 112))
    >>> f.kind, f.in_c, f.k, f.uops_per_entry, direct_uops(cfg, 3, 7)
    ('im2col', 147, 1, 10, 49)
    >>> choose_fold(cfg, in_c=64, k=3, stride=1, out_hw=(56, 56)) is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa import HwConfig

from .qnn import space_to_depth_factor, space_to_depth_weight


def _blocks(channels: int, block: int) -> int:
    return -(-channels // block)


def direct_uops(cfg: HwConfig, in_c: int, k: int) -> int:
    """GEMM micro-ops per output entry of the direct packed convolution."""
    return _blocks(in_c, cfg.block_in) * k * k


@dataclass(frozen=True)
class InputFold:
    """A convolution rewritten over folded channels: ``kind`` (``space_to_depth`` or
    ``im2col``), the rewritten layer's input channels ``in_c``, square kernel ``k`` (stride 1,
    no padding) and input ``in_hw``; ``stride`` and ``kernel`` of the original layer."""

    kind: str
    in_c: int
    k: int
    in_hw: tuple[int, int]
    stride: int
    kernel: int
    uops_per_entry: int

    def weight(self, w: np.ndarray) -> np.ndarray:
        """OIHW int8 weights of the rewritten convolution."""
        if self.kind == "space_to_depth":
            return space_to_depth_weight(w, self.stride)
        o = w.shape[0]
        return np.ascontiguousarray(w.reshape(o, -1, 1, 1))

    @property
    def window(self) -> int:
        """The ``im2col`` operator's window that folds the input
        (:func:`compiler.graph.reference.im2col`): the kernel (im2col), or the stride (space to
        depth: each ``s x s`` block into channels)."""
        return self.kernel if self.kind == "im2col" else self.stride


def choose_fold(
    cfg: HwConfig,
    *,
    in_c: int,
    k: int,
    stride: int,
    out_hw: tuple[int, int],
) -> InputFold | None:
    """The fold with the fewest GEMM micro-ops per output entry, or None when the direct
    convolution needs no more than any fold."""
    best: InputFold | None = None
    best_uops = direct_uops(cfg, in_c, k)
    s = space_to_depth_factor(cfg, in_c, k, stride)
    oh, ow = out_hw
    if s:
        kq = -(-k // s)
        uops = _blocks(in_c * s * s, cfg.block_in) * kq * kq
        if uops < best_uops:
            best_uops = uops
            best = InputFold(
                "space_to_depth", in_c * s * s, kq, (oh + kq - 1, ow + kq - 1), stride, k, uops,
            )  # fmt: skip
    uops = _blocks(in_c * k * k, cfg.block_in)
    if uops < best_uops:
        best = InputFold("im2col", in_c * k * k, 1, out_hw, stride, k, uops)
    return best


__all__ = ["InputFold", "choose_fold", "direct_uops"]
