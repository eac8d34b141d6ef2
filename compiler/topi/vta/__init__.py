"""Operators on the accelerator: int8 conv2d and dense in the packed layouts with the requantize
epilogue (shift, optional residual add, clip with optional relu), their schedule templates with
knobs, the tile heuristic, numpy references and whole-layer compilation. Seeded test data,
packing and binding it to a program are in :mod:`compiler.topi.vta.testing`.

Example:
    >>> import isa
    >>> from compiler.topi.vta import Conv2dLayer, compile_conv2d
    >>> compiled = compile_conv2d(Conv2dLayer("t", 4, 4, 4, 4, 1), isa.load_config("default"))
    >>> compiled.knobs.nthreads
    2
"""

from .conv2d import Conv2dKnobs, conv2d_packed, schedule_conv2d_packed
from .dense import DenseKnobs, dense_packed, schedule_dense_packed
from .epilogue import requantize_epilogue
from .heuristic import conv2d_knobs, dense_knobs, estimate_conv2d
from .layer import CompiledLayer, Conv2dLayer, DenseLayer, compile_conv2d, compile_dense
from .reference import conv2d_reference, dense_reference
from .workloads import C9_VTA_TUTORIAL_COUNTS, RESNET18, RESNET18_LAYERS

__all__ = [
    "C9_VTA_TUTORIAL_COUNTS",
    "RESNET18",
    "RESNET18_LAYERS",
    "CompiledLayer",
    "Conv2dKnobs",
    "Conv2dLayer",
    "DenseKnobs",
    "DenseLayer",
    "compile_conv2d",
    "compile_dense",
    "conv2d_knobs",
    "conv2d_packed",
    "conv2d_reference",
    "dense_knobs",
    "dense_packed",
    "dense_reference",
    "estimate_conv2d",
    "requantize_epilogue",
    "schedule_conv2d_packed",
    "schedule_dense_packed",
]
