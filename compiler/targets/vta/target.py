"""The accelerator target: scopes and the GEMM intrinsic from the config, the pass pipeline,
and code generation to a program file.

The pipeline, read top to bottom (target passes marked *):

====================== ==============================================================
vta_tensorize *        match tensorize regions against the GEMM intrinsic (micro-op calls)
simplify
alu_in_place *         elementwise accumulator stages write into their input's buffer
flatten_buffers
simplify_flat
inject_dma *           ``dma_copy`` nests -> 2-D loads/stores with padding
inject_alu *           ``alu`` nests -> ALU micro-op nests
simplify_dma
coproc_scopes *        which module runs each block (load / compute / store)
coproc_sync *          push/pop tokens per thread (VTA's CoProcInstDepDetector)
expand_virtual_threads * interleave cthread copies with private buffers
fold_uop_loops *       micro-op kernels, up to two loops folded into the instruction
check_sram *           every SRAM allocation fits its buffer
unroll_loops ... remove_no_op
====================== ==============================================================

Example:
    >>> t = get_vta_target("default")
    >>> t.name, [s.name for s in t.scopes][1:]
    ('vta', ['local.inp_buffer', 'local.wgt_buffer', 'local.acc_buffer'])
    >>> t.pipeline().names()[0]
    'vta_tensorize'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.ir.buffer import GLOBAL, register_scope
from compiler.ir.stmt import PrimFunc
from compiler.passes.pipeline import Pass, Pipeline
from compiler.passes.simplify import simplify_func
from compiler.targets.base import Target, get_target
from isa import HwConfig, Program, load_config

from .codegen import generate_program, plan_sram
from .intrin import gemm_intrinsic, make_scopes
from .passes.coproc import annotate_coproc_scopes, inject_coproc_sync
from .passes.fold_uop import make_fold_uop_loops
from .passes.inject_alu import make_inject_alu
from .passes.inject_dma import make_inject_dma
from .passes.inplace import alu_in_place
from .passes.tensorize import make_tensorize_pass
from .passes.virtual_thread import expand_virtual_threads


class VTATarget(Target):
    """The accelerator built from a hardware config (a preset name or an ``HwConfig``)."""

    name = "vta"

    def __init__(self, config: HwConfig | str = "default") -> None:
        self.config = load_config(config) if isinstance(config, str) else config
        self.sram = make_scopes(self.config)
        self.scopes = (GLOBAL, *self.sram.all())
        self.gemm = gemm_intrinsic(self.config)
        self.intrinsics = (self.gemm,)

    def register(self) -> None:
        # Scopes are named the same for every config; lookups by name follow the latest target.
        for scope in self.scopes:
            register_scope(scope, replace=True)

    def extend_pipeline(self, pipeline: Pipeline) -> Pipeline:
        cfg = self.config

        def check_sram(func: PrimFunc) -> PrimFunc:
            plan_sram(cfg, func)
            return func

        return (
            pipeline.replace(
                "lower_tensorize", Pass("vta_tensorize", make_tensorize_pass(self.gemm))
            )
            .insert_before("flatten_buffers", Pass("alu_in_place", alu_in_place))
            .insert_after(
                "simplify_flat",
                Pass("inject_dma", make_inject_dma(cfg)),
                Pass("inject_alu", make_inject_alu(cfg)),
                Pass("simplify_dma", simplify_func),
                Pass("coproc_scopes", annotate_coproc_scopes),
                Pass("coproc_sync", inject_coproc_sync),
                Pass("expand_virtual_threads", expand_virtual_threads),
                Pass("fold_uop_loops", make_fold_uop_loops(cfg)),
                Pass("check_sram", check_sram),
            )
        )

    def codegen(
        self,
        func: PrimFunc,
        layouts: Mapping[str, str] | None = None,
        roles: Mapping[str, str] | None = None,
    ) -> Program:
        """The program file of ``func`` (tensors zero until written with ``Program.write``)."""
        return generate_program(self.config, func, layouts=layouts, roles=roles)

    def __repr__(self) -> str:
        return f"VTATarget({self.config.name})"


def get_vta_target(config: HwConfig | str = "default") -> VTATarget:
    """The registered accelerator target for ``config`` (its scopes become resolvable)."""
    tgt = get_target("vta", config=config)
    assert isinstance(tgt, VTATarget)
    return tgt


def _factory(config: HwConfig | str = "default", **_: Any) -> VTATarget:
    return VTATarget(config)
