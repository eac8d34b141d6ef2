"""``vtac layer --target gpu`` end to end (small layers, CUDA simulator), and the device
description's occupancy calculation."""

from __future__ import annotations

import argparse
import json

import pytest

from compiler.targets.gpu import A100, H100
from compiler.targets.gpu.module import cuda_backend
from runtime.gpu_layer import run_gpu_layer

pytestmark = pytest.mark.gpu


def layer_args(**kw) -> argparse.Namespace:
    base = dict(kind="conv2d", h=6, w=6, in_c=3, out_c=4, k=3, stride=1, pad=1, batch=None,
                relu=False, residual=False, seed=0, check=True, json=True, ptx=None,
                output=None)  # fmt: skip
    base.update(kw)
    return argparse.Namespace(**base)


def test_layer_conv2d_check_json(capsys):
    assert run_gpu_layer(layer_args(relu=True, residual=True)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["match"] is True and report["ran_on"] == cuda_backend()
    (k,) = report["kernels"]
    assert k["block"] == [6, 6, 1] and k["grid"] == [1, 1, 1]
    assert k["shared_bytes"] == (3 * 8 * 8 + 4 * 3 * 3 * 3) * 4
    assert (k["registers"] is None) == (k["registers_unavailable"] is not None)


def test_layer_dense_writes_ptx(tmp_path, capsys):
    from compiler.targets.gpu.ptx import PtxUnavailable

    path = tmp_path / "dense.ptx"
    try:
        status = run_gpu_layer(layer_args(kind="dense", in_c=16, out_c=8, check=False,
                                          json=False, ptx=str(path)))  # fmt: skip
    except PtxUnavailable as exc:
        pytest.skip(str(exc))
    assert status == 0
    assert ".target sm_90" in path.read_text()
    assert "block (8, 1, 1)" in capsys.readouterr().out


def test_occupancy_limits():
    # 256 threads, 32 registers: 8 blocks fill the SM's 64 warps
    occ = H100.occupancy(256, 4096, 32)
    assert (occ.blocks_per_sm, occ.occupancy) == (8, 1.0)
    # 255 registers per thread: one 256-thread block needs 256 * 256 = 64K registers
    occ = H100.occupancy(256, 0, 255)
    assert (occ.blocks_per_sm, occ.limited_by) == (1, "registers")
    # 100 KiB of shared memory per block (+1 KiB reserved): 2 blocks in 228 KiB, 1 in 164 KiB
    assert H100.occupancy(64, 100 * 1024).blocks_per_sm == 2
    assert A100.occupancy(64, 100 * 1024).blocks_per_sm == 1
    # tiny blocks hit the 32 resident blocks per SM
    occ = H100.occupancy(32, 0, 16)
    assert (occ.blocks_per_sm, occ.limited_by, occ.occupancy) == (32, "blocks", 0.5)
    assert not H100.occupancy(32, 0).registers_known
