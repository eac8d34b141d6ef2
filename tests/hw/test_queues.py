"""Command and dependency queues: counts, full/empty, FIFO order, registered visibility."""

from __future__ import annotations

import pytest

from tests.hw.blocks import run_block

pytestmark = pytest.mark.rtl

#: (push probability, pop probability, expect the queue to fill): back-pressure, balanced, idle.
TRAFFIC = [(0.9, 0.25, True), (0.6, 0.6, False), (0.25, 0.9, False)]


@pytest.mark.parametrize("push,pop,full", TRAFFIC)
def test_cmd_queue(push, pop, full, build_root):
    run_block(
        "vta_cmd_queue",
        "cocotb_queues",
        "cmd_queue",
        build_root,
        knobs={"push": push, "pop": pop, "expect_full": full, "seed": 7},
    )


@pytest.mark.parametrize("push,pop,full", TRAFFIC)
def test_dep_queue(push, pop, full, build_root):
    run_block(
        "vta_dep_queue",
        "cocotb_queues",
        "dep_queue",
        build_root,
        knobs={"push": push, "pop": pop, "expect_full": full, "seed": 3},
    )
