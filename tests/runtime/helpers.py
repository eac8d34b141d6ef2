"""Helpers shared by the accelerator network tests."""

from typing import Any


def host_ops_but_folds(net: Any) -> list[str]:
    """The operators a compiled network leaves on the host, in order, without the channel
    folds (``im2col``) that the build's ``host_steps`` pass puts before a convolution with few
    input channels; each of those must feed a convolution on the accelerator."""
    part = net.partition
    readers: dict[str, list[Any]] = {}
    for node in net.graph.nodes:
        for v in node.inputs:
            readers.setdefault(getattr(v, "name", ""), []).append(node)
    ops = []
    for p in part.host_nodes():
        if p.op != "im2col":
            ops.append(p.op)
            continue
        for reader in readers.get(p.node, []):
            assert reader.op == "conv2d", (p.node, reader.op)
            assert part.placement(reader.name).device == "vta", (p.node, reader.name)
    return ops
