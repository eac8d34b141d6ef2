"""The GPU a kernel is compiled for: one typed description of its limits, used by the
lowering checks (threads per block, shared memory per block) and by the occupancy estimate.

The default is an H100-class device (compute capability 9.0). The figures are NVIDIA's
published limits for that compute capability.

Example:
    >>> H100.max_threads_per_block, H100.shared_bytes_per_block // 1024
    (1024, 48)
    >>> occ = H100.occupancy(threads_per_block=256, shared_bytes=8192, registers_per_thread=32)
    >>> occ.blocks_per_sm, occ.limited_by, occ.occupancy
    (8, 'threads', 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and the fraction of the SM's warp slots they fill.

    ``limited_by`` names the resource that bounds ``blocks_per_sm`` (``threads``, ``blocks``,
    ``registers`` or ``shared``); ``registers_known`` is False when no register count was
    available, in which case registers were not taken into account.
    """

    blocks_per_sm: int
    warps_per_block: int
    occupancy: float
    limited_by: str
    registers_known: bool


@dataclass(frozen=True)
class GpuDevice:
    """Limits of one GPU model.

    ``shared_bytes_per_block`` is what a kernel gets without opting in (static ``__shared__``
    arrays, which is what the generated kernels use); ``shared_bytes_per_block_optin`` is the
    dynamic-shared-memory ceiling after ``cudaFuncSetAttribute``. ``compute_capability`` picks
    the PTX target (``sm_90`` for ``(9, 0)``).
    """

    name: str
    compute_capability: tuple[int, int]
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    shared_bytes_per_block: int = 48 * 1024
    shared_bytes_per_block_optin: int = 227 * 1024
    shared_bytes_per_sm: int = 228 * 1024
    #: shared memory the driver reserves per resident block (CUDA 11+ on sm_80 and later)
    shared_bytes_reserved_per_block: int = 1024
    shared_alloc_unit: int = 128
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    register_alloc_unit: int = 256
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    warp_size: int = 32
    sm_count: int = 132

    @property
    def arch(self) -> str:
        """The PTX target name, e.g. ``sm_90``."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def occupancy(
        self, threads_per_block: int, shared_bytes: int, registers_per_thread: int | None = None
    ) -> Occupancy:
        """The CUDA occupancy calculation for one kernel launch configuration.

        Example:
            >>> H100.occupancy(1024, 0, 64).limited_by
            'registers'
            >>> H100.occupancy(128, 100 * 1024).blocks_per_sm
            2
        """
        warps = max(1, math.ceil(threads_per_block / self.warp_size))
        limits = {
            "blocks": self.max_blocks_per_sm,
            "threads": self.max_warps_per_sm // warps,
        }
        if shared_bytes > 0:
            per_block = _round_up(shared_bytes, self.shared_alloc_unit)
            per_block += self.shared_bytes_reserved_per_block
            limits["shared"] = self.shared_bytes_per_sm // per_block
        if registers_per_thread is not None:
            per_warp = _round_up(registers_per_thread * self.warp_size, self.register_alloc_unit)
            limits["registers"] = (self.registers_per_sm // per_warp) // warps
        limited_by = min(limits, key=lambda k: (limits[k], list(limits).index(k)))
        blocks = max(0, limits[limited_by])
        return Occupancy(
            blocks_per_sm=blocks,
            warps_per_block=warps,
            occupancy=min(1.0, blocks * warps / self.max_warps_per_sm),
            limited_by=limited_by,
            registers_known=registers_per_thread is not None,
        )


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


#: An H100-class device (SXM, compute capability 9.0): the default of the GPU target.
H100 = GpuDevice("H100", (9, 0))
#: An A100-class device (compute capability 8.0): 164 KiB of shared memory per SM.
A100 = GpuDevice(
    "A100",
    (8, 0),
    shared_bytes_per_block_optin=163 * 1024,
    shared_bytes_per_sm=164 * 1024,
    sm_count=108,
)
