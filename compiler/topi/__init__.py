"""Operators built on the tensor expression language.

Example:
    >>> from compiler import te, topi
    >>> A = te.placeholder((32, 64), name="A")
    >>> B = te.placeholder((64, 16), name="B")
    >>> topi.relu(topi.matmul(A, B)).shape
    (32, 16)
"""

from compiler.topi.activation import (
    batch_norm,
    divide,
    exp,
    hard_sigmoid,
    hard_swish,
    leaky_relu,
    negative,
    sigmoid,
    sqrt,
)
from compiler.topi.conv2d import conv2d_nchw, conv2d_nchwc, pack_data, pack_kernel, unpack_data
from compiler.topi.elementwise import (
    add,
    broadcast_shape,
    cast,
    clip,
    left_shift,
    maximum,
    minimum,
    multiply,
    relu,
    requantize,
    right_shift,
    subtract,
)
from compiler.topi.matmul import batch_matmul, dense, dense_split_k, matmul
from compiler.topi.pad import pad
from compiler.topi.pooling import avg_pool2d, global_avg_pool2d, max_pool2d
from compiler.topi.softmax import softmax
from compiler.topi.transform import concat, layout_transform, reshape, transpose

__all__ = [
    "add",
    "avg_pool2d",
    "batch_matmul",
    "batch_norm",
    "broadcast_shape",
    "cast",
    "clip",
    "concat",
    "conv2d_nchw",
    "conv2d_nchwc",
    "dense",
    "dense_split_k",
    "divide",
    "exp",
    "global_avg_pool2d",
    "hard_sigmoid",
    "hard_swish",
    "layout_transform",
    "leaky_relu",
    "left_shift",
    "matmul",
    "max_pool2d",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "pack_data",
    "pack_kernel",
    "pad",
    "relu",
    "requantize",
    "reshape",
    "right_shift",
    "sigmoid",
    "softmax",
    "sqrt",
    "subtract",
    "transpose",
    "unpack_data",
]
