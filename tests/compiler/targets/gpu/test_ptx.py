"""PTX for every GPU schedule (sm_80 and sm_90), assembled by ptxas when it is installed.

PTX comes from the same kernel source the simulator runs: this process has the simulator
enabled, so ``compile_ptx`` compiles in a child process without it. All schedules' kernels
go through one child per compute capability.
"""

from __future__ import annotations

import re

import pytest

from compiler.build import build
from compiler.targets.gpu import H100
from compiler.targets.gpu.codegen import module_source
from compiler.targets.gpu.ptx import (
    PtxUnavailable,
    compile_ptx,
    parse_ptxas_output,
    ptxas_info,
    ptxas_unavailable_reason,
)
from tests.compiler.targets.gpu.cases import CASES

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def modules():
    out = {}
    for name, make in CASES.items():
        case = make()
        out[name] = build(case.schedule, case.args, target="gpu", name=name)
    return out


@pytest.fixture(scope="module", params=[(8, 0), (9, 0)], ids=["sm_80", "sm_90"])
def ptx(request, modules):
    sources = [src for m in modules.values() for src in m.sources]
    try:
        code = compile_ptx(module_source(sources), [(s.name, s.signature) for s in sources],
                           request.param)  # fmt: skip
    except PtxUnavailable as exc:
        pytest.skip(f"no PTX compiler on this machine: {exc}")
    return request.param, code


def test_ptx_for_every_kernel(ptx, modules):
    (major, minor), code = ptx
    kernels = [k for m in modules.values() for k in m.kernels]
    assert set(code) == {k.name for k in kernels}
    for k in kernels:
        text = code[k.name]
        assert f".target sm_{major}{minor}" in text, k.name
        assert ".entry" in text, k.name
        barriers = k.name.startswith(("matmul", "dense", "conv2d", "softmax"))
        assert ("bar.sync" in text) == barriers, k.name


def test_ptxas_assembles_and_reports(ptx, modules):
    reason = ptxas_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    (major, minor), code = ptx
    for m in modules.values():
        for k in m.kernels:
            try:
                info = ptxas_info(code[k.name], f"sm_{major}{minor}")
            except PtxUnavailable as exc:
                pytest.skip(str(exc))
            assert 0 < info.registers <= H100.max_registers_per_thread, k.name
            # ptxas counts the same static shared memory as the lowered buffers
            assert info.shared_bytes == k.shared_bytes, k.name


def test_module_resources_report_occupancy(modules):
    res = modules["matmul"].resources()
    (r,) = res
    assert r.block == (4, 4, 1) and r.grid == (2, 2, 1) and r.shared_bytes == 2 * 128 * 4
    if r.unavailable is None:
        assert r.registers is not None and r.ptxas is not None
    else:
        assert r.registers is None and not r.occupancy.registers_known
    assert 0 < r.occupancy.occupancy <= 1


def test_parse_ptxas_output():
    text = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]"
    )
    info = parse_ptxas_output(text, "sm_90")
    assert (info.registers, info.shared_bytes, info.spill_stores, info.stack_bytes) == (
        40, 2048, 4, 8,
    )  # fmt: skip
    assert re.search("Used 40", info.text)
