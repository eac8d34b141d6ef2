"""Operators built on the tensor expression language.

Example:
    >>> from compiler import te, topi
    >>> A = te.placeholder((32, 64), name="A")
    >>> B = te.placeholder((64, 16), name="B")
    >>> topi.relu(topi.matmul(A, B)).shape
    (32, 16)
"""

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
from compiler.topi.matmul import dense, matmul
from compiler.topi.pad import pad
from compiler.topi.pooling import avg_pool2d, global_avg_pool2d, max_pool2d
from compiler.topi.softmax import softmax

__all__ = [
    "add",
    "avg_pool2d",
    "broadcast_shape",
    "cast",
    "clip",
    "conv2d_nchw",
    "conv2d_nchwc",
    "dense",
    "global_avg_pool2d",
    "left_shift",
    "matmul",
    "max_pool2d",
    "maximum",
    "minimum",
    "multiply",
    "pack_data",
    "pack_kernel",
    "pad",
    "relu",
    "requantize",
    "right_shift",
    "softmax",
    "subtract",
    "unpack_data",
]
