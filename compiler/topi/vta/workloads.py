"""The ResNet-18 conv2d layers C1..C12 (batch 1, 224x224 input), the workload list of the VTA
benchmarks and the TVM paper (Table 2), and published counts to cross-check against.

Example:
    >>> [l.name for l in RESNET18_LAYERS][:3], RESNET18["C9"].macs
    (['C1', 'C2', 'C3'], 115605504)
"""

from __future__ import annotations

from .layer import Conv2dLayer

RESNET18_LAYERS: tuple[Conv2dLayer, ...] = (
    Conv2dLayer("C1", 224, 224, 3, 64, 7, 2, 3),
    Conv2dLayer("C2", 56, 56, 64, 64, 3, 1, 1),
    Conv2dLayer("C3", 56, 56, 64, 64, 1, 1, 0),
    Conv2dLayer("C4", 56, 56, 64, 128, 3, 2, 1),
    Conv2dLayer("C5", 56, 56, 64, 128, 1, 2, 0),
    Conv2dLayer("C6", 28, 28, 128, 128, 3, 1, 1),
    Conv2dLayer("C7", 28, 28, 128, 256, 3, 2, 1),
    Conv2dLayer("C8", 28, 28, 128, 256, 1, 2, 0),
    Conv2dLayer("C9", 14, 14, 256, 256, 3, 1, 1),
    Conv2dLayer("C10", 14, 14, 256, 512, 3, 2, 1),
    Conv2dLayer("C11", 14, 14, 256, 512, 1, 2, 0),
    Conv2dLayer("C12", 7, 7, 512, 512, 3, 1, 1),
)
RESNET18 = {layer.name: layer for layer in RESNET18_LAYERS}

#: VTA's functional-simulator counters for C9 on its 1x16x16 core with the schedule of its
#: conv2d optimisation tutorial (output channels tiled by 128, rows by 7, whole rows of 14, one
#: 16-channel input block per step, 2 virtual threads on output channels).
C9_VTA_TUTORIAL_COUNTS = {
    "gemm_uops": 451584,
    "alu_uops": 9408,
    "wgt_load_bytes": 1179648,
    "inp_load_bytes": 114688,
    "out_store_bytes": 50176,
}
