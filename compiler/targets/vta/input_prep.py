"""What the host does to a value before an accelerator group reads it: the packing of each
group input that is not read in place from the group that stored it.

The accelerator's programs read packed int8 (or int32) tensors in its blocked layout. A group
input that another accelerator group stored in that layout is read in place
(:mod:`compiler.targets.vta.link`); any other is packed into the group's input tensor by the
host: NCHW (or ``(N, C)`` rows) into the blocked layout, with ``block_in`` channels per block
for a GEMM input, ``block_out`` for what an ALU group or a pool reads (the layout a producing
group stores). A matmul of two activations reads a batch of matrices: its left operand as the
rows of each matrix (``batch_rows``), its right operand ``(..., K, N)`` transposed into the
weight layout (``batch_weight``: the weight tensor of its program is an activation the host
writes at every run, not a constant), a fused residual in the output's rows
(``batch_rows_out``).

Whatever else the host computes before a group is a graph node of the host's: a max pool's
-128 padding (a ``pad``) and the first layer's channel fold (an ``im2col``) are made nodes by the
``host_steps`` pass (:mod:`compiler.targets.vta.host_steps`), which ``vtac graph --target vta``
prints and the host groups run.

The build decides the packing per group input (:func:`input_preps`, the ``input_prep`` pass of
:func:`compiler.model.vta.vta_pipeline`); the runtime only carries it out.

Example:
    >>> from isa import load_config
    >>> InputPrep("data", "nchw").describe(load_config("default"))
    'pack NCHW into 1x4 blocks'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.registry import lookup
from compiler.topi.vta.packing import (
    pack_batch_rows,
    pack_batch_weight,
    pack_nchw,
    pack_nchw_out,
    pack_rows,
)
from isa import HwConfig

#: How the host packs an array into a group's input tensor (``out``: the output layout, with
#: ``block_out`` channels per block, that a producing group stores; ``batch_``: each matrix of a
#: batch of matrices, ``batch_weight`` transposed into the weight layout).
PACKINGS = ("nchw", "nchw_out", "rows", "rows_out", "batch_rows", "batch_rows_out", "batch_weight")
#: The packings of a batch of matrices (a matmul of two activations): no padding or folding.
BATCH_PACKINGS = ("batch_rows", "batch_rows_out", "batch_weight")


@dataclass(frozen=True)
class InputPrep:
    """How the host writes a value into symbol ``symbol`` of a group's program: packed
    (``packing``, one of :data:`PACKINGS`)."""

    symbol: str
    packing: str

    def describe(self, cfg: HwConfig) -> str:
        """The host's packing, in words (what ``vtac graph --target vta`` prints)."""
        if self.packing == "batch_weight":
            return (
                f"transpose each (K, N) matrix into the weight layout, {cfg.block_out}x"
                f"{cfg.block_in} blocks"
            )
        block = cfg.block_in if self.packing in ("nchw", "rows", "batch_rows") else cfg.block_out
        layout = {"n": "NCHW", "r": "(N, C) rows", "b": "the rows of each matrix"}[self.packing[0]]
        return f"pack {layout} into {cfg.batch}x{block} blocks"

    def packed(self, x: np.ndarray, cfg: HwConfig) -> np.ndarray:
        """``x`` packed: the bytes of the group's input tensor."""
        if self.packing == "batch_weight":
            return pack_batch_weight(x, cfg)
        if self.packing in ("batch_rows", "batch_rows_out"):
            return pack_batch_rows(x, cfg, out=self.packing == "batch_rows_out")
        if self.packing == "nchw":
            return pack_nchw(x, cfg)
        if self.packing == "nchw_out":
            return pack_nchw_out(x, cfg)
        return pack_rows(x, cfg, out=self.packing == "rows_out")


def input_prep(group: Any, symbol: str, ndim: int) -> InputPrep:
    """How the host packs ``group``'s input ``symbol`` (``data``, ``residual``, or a matmul's
    ``weight``) of ``ndim`` axes when no group stored it in place."""
    if group.kind == "matmul":
        return InputPrep(symbol, {"data": "batch_rows", "weight": "batch_weight",
                                  "residual": "batch_rows_out"}[symbol])  # fmt: skip
    if (
        symbol == "residual"
        or group.kind in ("global_sum_pool2d", "max_pool2d")
        or lookup("vta", group.kind).kind in ("elementwise", "rescale")
    ):
        return InputPrep(symbol, "nchw_out" if ndim == 4 else "rows_out")
    return InputPrep(symbol, "nchw" if ndim == 4 else "rows")


def group_inputs(group: Any) -> list[tuple[str, Any]]:
    """``(symbol, value)`` of the inputs of ``group`` the host may write: its ``data``, a
    matmul's right operand (its program's ``weight``, an activation) and, for a group with a
    fused residual, its ``residual``."""
    inputs = [("data", group.anchor.inputs[0])]
    if group.kind == "matmul":
        inputs.append(("weight", group.anchor.inputs[1]))
    if group.residual is not None:
        inputs.append(("residual", group.residual))
    return inputs


def input_preps(
    groups: Any, aliased: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[InputPrep, ...]]:
    """Per accelerator group (by name), the packing of its inputs that the DRAM plan does
    not read in place (``aliased``: per group, the symbols read in place), in the order
    ``data``, ``weight``, ``residual``."""
    return {
        g.name: tuple(
            input_prep(g, symbol, len(v.type.shape))
            for symbol, v in group_inputs(g)
            if symbol not in aliased.get(g.name, ())
        )
        for g in groups
    }


__all__ = ["BATCH_PACKINGS", "PACKINGS", "InputPrep", "group_inputs", "input_prep", "input_preps"]
