"""Graph passes: plain functions ``Graph -> Graph``, one per module.

Example:
    >>> from compiler.graph.passes import fuse_ops
    >>> fuse_ops.__name__
    'fuse_ops'
"""

from compiler.graph.passes.conv_rows import conv_columns_to_rows
from compiler.graph.passes.dead_nodes import eliminate_dead_nodes
from compiler.graph.passes.fold_affine import fold_affine
from compiler.graph.passes.fold_batch_norm import fold_batch_norm
from compiler.graph.passes.fold_bias_add import fold_bias_add
from compiler.graph.passes.fold_constants import fold_constants
from compiler.graph.passes.fold_hard_activations import fold_hard_activations
from compiler.graph.passes.fold_pad import fold_pad
from compiler.graph.passes.fuse_ops import fuse_ops
from compiler.graph.passes.interleave import elementwise_before_interleave
from compiler.graph.passes.matmul_to_dense import (
    dense_to_matmul,
    flatten_matmul_rows,
    matmul_to_dense,
)
from compiler.graph.passes.pack_layout import pack_layout
from compiler.graph.passes.pad_channels import pad_channels
from compiler.graph.passes.residual_gate import factor_residual_gate

__all__ = [
    "conv_columns_to_rows",
    "eliminate_dead_nodes",
    "dense_to_matmul",
    "elementwise_before_interleave",
    "factor_residual_gate",
    "flatten_matmul_rows",
    "fold_affine",
    "fold_batch_norm",
    "fold_bias_add",
    "fold_constants",
    "fold_hard_activations",
    "fold_pad",
    "fuse_ops",
    "matmul_to_dense",
    "pack_layout",
    "pad_channels",
]
